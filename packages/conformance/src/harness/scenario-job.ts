/**
 * The job the suite runs in a child process, as a module: a deterministic generator of
 * unique ids into the author's sink, wrapped in a {@link ScenarioSink}. child-job.ts loads it
 * and runs it; on worker threads (`workers` > 1) every thread builds it again from the same
 * config, with a {@link ScenarioControl} of its own (each thread has its own copy of this
 * module), so kills, fault points and the journal work from whichever thread a sink runs on.
 */
import { join } from "node:path";
import { GeneratorSource, type JobRuntime, StreamJob } from "@exactly/core";
import type { ConformanceRecord } from "../definition.ts";
import { conformanceRecord } from "../records.ts";
import { CHECKPOINTS, type ChildConfig, JOURNAL, LANES, SINK_NAME, SOURCE_ID } from "./child-protocol.ts";
import { ScenarioControl, ScenarioSink } from "./scenario-sink.ts";
import { loadSinkFactory, scenarioCheckpointStorage } from "./sink-module.ts";

let control: ScenarioControl | undefined;

/** This thread's scenario control: made by the first build of the job in the thread. */
export function threadControl(config: ChildConfig): ScenarioControl {
  control ??= new ScenarioControl(config, join(config.scope.dir, JOURNAL));
  return control;
}

export default async function scenarioJob({ params, logger }: JobRuntime): Promise<StreamJob> {
  const config = params.config as ChildConfig;
  const own = threadControl(config);
  const factory = await loadSinkFactory(config.sinkModule, config.sinkExport);
  const job = new StreamJob({
    name: "conformance",
    parallelism: config.parallelism,
    workers: config.workers ?? 1,
    checkpoint: {
      storage:
        config.checkpointStorageExport === null
          ? join(config.scope.dir, CHECKPOINTS)
          : await scenarioCheckpointStorage(config, config.scope),
      intervalMs: config.checkpointIntervalMs,
      timeoutMs: config.checkpointTimeoutMs,
    },
    // The harness restarts the process itself; a short restart delay keeps the job's own
    // timing (which sinks check their transaction timeouts against) small.
    restart: { maxRestarts: 0, maxDelayMs: 1000 },
    logger,
    batchSize: config.batchSize,
  });
  job
    .fromSource(
      new GeneratorSource<ConformanceRecord>({
        name: "conformance",
        count: config.records,
        splits: LANES,
        ...(config.ratePerSecond === undefined ? {} : { ratePerSecond: config.ratePerSecond }),
        generate: conformanceRecord,
      }),
      { uid: SOURCE_ID },
    )
    .sinkTo(() => new ScenarioSink(factory({ scope: config.scope, options: config.sinkOptions }), own), {
      name: SINK_NAME,
    });
  return job;
}
