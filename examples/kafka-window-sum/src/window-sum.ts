/**
 * The window-sum pipeline from Flink's documentation, on exactly:
 * Kafka topic in → keyBy(key) → tumbling 1 s event-time windows summing `value` → Kafka topic out,
 * written in one Kafka transaction per checkpoint.
 */
import {
  type JobClient,
  type JobRuntime,
  type Logger,
  loadJob,
  StreamJob,
  TumblingEventTimeWindows,
} from "@exactly/core";
import { KafkaSource, kafkaSink } from "@exactly/kafka";

export interface Event {
  readonly id: number;
  readonly key: string;
  readonly value: number;
  /** Event time, ms. */
  readonly ts: number;
}

export interface WindowSum {
  readonly key: string;
  readonly start: number;
  readonly end: number;
  readonly sum: number;
}

const EPOCH = 1_767_225_600_000; // 2026-01-01T00:00:00Z
const WINDOW_MS = 1000;
/** Partitions of the input topic. Read by one source subtask, so event time must be tracked per partition. */
export const INPUT_PARTITIONS = 3;

/** The input: deterministic, so a batch computation can say what the output must be. */
export function event(id: number): Event {
  return { id, key: `sensor-${id % 5}`, value: (id * 37) % 100, ts: EPOCH + id * 10 };
}

/** The input partition of event `id`: consecutive events land on different partitions. */
export function partitionOf(id: number): number {
  return id % INPUT_PARTITIONS;
}

/** What the pipeline must produce, computed in one batch over the same input: window → sum. */
export function expectedSums(events: number): Map<string, number> {
  const sums = new Map<string, number>();
  for (let id = 0; id < events; id++) {
    const e = event(id);
    const start = e.ts - (e.ts % WINDOW_MS);
    const slot = `${e.key}@${start}`;
    sums.set(slot, (sums.get(slot) ?? 0) + e.value);
  }
  return sums;
}

export interface WindowSumConfig {
  readonly brokers: string[];
  readonly input: string;
  readonly output: string;
  readonly checkpoints: string;
  /** Worker threads for the subtasks; default the machine's cores (at most 2, the job's parallelism). */
  readonly workers?: number;
}

/** Loads the job from this module (so that its subtasks can run on worker threads) and starts it. */
export async function startWindowSumJob(config: WindowSumConfig, logger: Logger): Promise<JobClient> {
  const job = await loadJob(new URL(import.meta.url), {
    params: config as unknown as Record<string, unknown>,
    runtime: { logger },
  });
  return job.start();
}

/**
 * The job, as a module builds it: every worker thread calls this again with the same config.
 * The source reads on one subtask; the window stage and the sink run two, subtask i on thread
 * i mod 2, so the keyBy edge to subtask 1 crosses threads and each thread has its own Kafka sink.
 */
export default function windowSumJob({ params, logger, metrics }: JobRuntime): StreamJob {
  const config = params as unknown as WindowSumConfig;
  const job = new StreamJob({
    name: "kafka-window-sum",
    parallelism: 2,
    ...(config.workers === undefined ? {} : { workers: config.workers }),
    metrics,
    checkpoint: { storage: config.checkpoints, intervalMs: 50, timeoutMs: 10_000 },
    // The default restart strategy: a broker outage is ridden through (restarted with backoff
    // for as long as it lasts), a permanent failure ends the job with its error.
    logger,
  });
  job
    .fromSource(
      new KafkaSource<Event>({
        brokers: config.brokers,
        topics: [config.input],
        stopAtLatest: true,
        deserializer: (record) => JSON.parse(record.value?.toString() ?? "null") as Event,
      }),
      // One subtask reads the three partitions, a fetched chunk of one after a chunk of another,
      // so they drift far apart in event time. The watermark is kept per partition (the
      // minimum goes downstream), so a partition that lags is not dropped as late.
      { parallelism: 1, watermarks: { timestampOf: (e) => e.ts, maxOutOfOrdernessMs: 100 } },
    )
    .keyBy((e) => e.key)
    .window(TumblingEventTimeWindows.of(WINDOW_MS))
    .aggregate({ createAccumulator: () => 0, add: (e, sum) => sum + e.value, getResult: (sum) => sum })
    .sinkTo(
      kafkaSink({
        brokers: config.brokers,
        topic: config.output,
        transactionalIdPrefix: `window-sum-${config.output}`,
        transactionTimeoutMs: 60_000,
        serializer: (w) => ({
          key: `${w.key}@${w.start}`,
          value: JSON.stringify({ key: w.key, start: w.start, end: w.end, sum: w.value } satisfies WindowSum),
        }),
      }),
      { name: "window-sums" },
    );
  return job;
}
