/**
 * The job the suite runs in a child process: a deterministic generator of unique ids into
 * the author's sink, wrapped in a {@link ScenarioSink}. The child kills itself with SIGKILL
 * (a fault point, or a random kill inside a sink call) or the test process stops it with
 * SIGTERM (graceful stop); it prints a line at each completed checkpoint and an outcome
 * line when it ends by itself.
 */
import { join } from "node:path";
import { GeneratorSource, StreamJob, silentLogger } from "@exactly/core";
import { armFault } from "@exactly/core/testing";
import type { ConformanceRecord } from "../definition.ts";
import { conformanceRecord } from "../records.ts";
import {
  CHECKPOINT_PREFIX,
  CHECKPOINTS,
  type ChildConfig,
  type ChildOutcome,
  JOURNAL,
  LANES,
  OUTCOME_PREFIX,
  SINK_NAME,
  SOURCE_ID,
} from "./child-protocol.ts";
import { ScenarioControl, ScenarioSink } from "./scenario-sink.ts";
import { loadSinkFactory, scenarioCheckpointStorage } from "./sink-module.ts";

const config = JSON.parse(process.env.CONFORMANCE_CONFIG ?? "{}") as ChildConfig;
const control = new ScenarioControl(config, join(config.scope.dir, JOURNAL));
const factory = await loadSinkFactory(config.sinkModule, config.sinkExport);

const job = new StreamJob({
  name: "conformance",
  parallelism: config.parallelism,
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
  logger: silentLogger,
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
  .sinkTo(() => new ScenarioSink(factory({ scope: config.scope, options: config.sinkOptions }), control), {
    name: SINK_NAME,
  });

let declined = 0;
const client = job.start({
  onComplete: (checkpointId) => {
    control.completed++;
    control.journal({ e: "complete", pid: process.pid, checkpointId });
    // Tells the test process how far the run got (a graceful stop waits for it).
    process.stdout.write(`${CHECKPOINT_PREFIX}${checkpointId}\n`);
    if (config.fault && control.completed === config.fault.afterCheckpoints) armFault(config.fault.spec);
  },
  onDeclined: (checkpointId) => {
    declined++;
    control.journal({ e: "declined", pid: process.pid, checkpointId });
  },
});
process.on("SIGTERM", () => {
  client.stop().catch(() => {});
});
const report = (outcome: ChildOutcome) => process.stdout.write(`${OUTCOME_PREFIX}${JSON.stringify(outcome)}\n`);
try {
  await client.result;
  report({ ok: true, checkpoints: control.completed, declined });
} catch (error) {
  const cause = (error as { cause?: unknown }).cause ?? error;
  const code = (cause as { code?: unknown }).code;
  report({
    ok: false,
    checkpoints: control.completed,
    declined,
    ...(typeof code === "string" ? { errorCode: code } : {}),
    error: error instanceof Error ? error.message : String(error),
  });
  process.exitCode = 1;
}
