/**
 * Event time: readings that arrive out of order, put into the second they were measured in
 * (tumbling 1 s windows), per sensor: the mean, and the hottest reading. Both windows fire once
 * the watermark passes their end, so each is written once, complete.
 *
 *   exactly run src/sensor-windows-job.ts      (./means, ./maxima and ./checkpoints)
 */
import { join } from "node:path";
import { GeneratorSource, type JobRuntime, StreamJob, TumblingEventTimeWindows } from "@exactly/core";
import { localFileSink } from "@exactly/file";
import { READINGS, reading } from "./input.ts";

/** The mean of one sensor's readings in one window. */
export interface Mean {
  readonly readings: number;
  readonly celsius: number;
}

export default function sensorWindowsJob({ params, logger, metrics }: JobRuntime): StreamJob {
  const dir = (params.dir as string | undefined) ?? ".";
  const job = new StreamJob({
    name: "sensor-windows",
    parallelism: 2,
    ...(params.workers === undefined ? {} : { workers: params.workers as number }),
    checkpoint: { storage: join(dir, "checkpoints"), intervalMs: 200 },
    logger,
    metrics,
  });

  // #region watermarks
  const readings = job.fromSource(new GeneratorSource({ name: "readings", count: READINGS, generate: reading }), {
    // Event time is the record's own timestamp. The watermark trails the latest timestamp seen
    // (per split) by the disorder allowed: a window fires once the watermark passes its end.
    watermarks: { timestampOf: (r) => r.ts, maxOutOfOrdernessMs: 100 },
  });
  // #endregion watermarks

  // #region window-aggregate
  readings
    .keyBy((r) => r.sensor)
    .window(TumblingEventTimeWindows.of(1000))
    .aggregate<{ count: number; sum: number }, Mean>(
      {
        // The accumulator is keyed state: plain JSON, checkpointed while the window is open.
        createAccumulator: () => ({ count: 0, sum: 0 }),
        add: (r, acc) => ({ count: acc.count + 1, sum: acc.sum + r.celsius }),
        getResult: (acc) => ({ readings: acc.count, celsius: acc.sum / acc.count }),
      },
      { uid: "mean-per-second" },
    )
    // Each result is { key, start, end, value }: one per sensor and window.
    .sinkTo(() => localFileSink({ directory: join(dir, "means"), partSuffix: ".jsonl" }), { name: "means" });
  // #endregion window-aggregate

  // #region window-reduce
  readings
    .keyBy((r) => r.sensor)
    .window(TumblingEventTimeWindows.of(1000))
    // The hottest reading of each sensor and second: a window's records folded two at a time.
    .reduce((a, b) => (b.celsius > a.celsius ? b : a), { uid: "max-per-second" })
    .sinkTo(() => localFileSink({ directory: join(dir, "maxima"), partSuffix: ".jsonl" }), { name: "maxima" });
  // #endregion window-reduce
  return job;
}
