/**
 * The job the suite runs in a child process: a deterministic generator of unique ids into
 * the author's sink. The test process kills it with SIGKILL (EXACTLY_FAULT) or stops it
 * with SIGTERM (graceful stop), and reads the outcome line it prints when it ends.
 */
import { join } from "node:path";
import { type Batch, GeneratorSource, type Sink, StreamJob, silentLogger } from "@exactly/core";
import type { ConformanceRecord } from "../definition.ts";
import {
  CHECKPOINTS,
  type ChildConfig,
  type ChildOutcome,
  LANES,
  OUTCOME_PREFIX,
  SINK_NAME,
} from "./child-protocol.ts";
import { loadSinkFactory } from "./sink-module.ts";

const config = JSON.parse(process.env.CONFORMANCE_CONFIG ?? "{}") as ChildConfig;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Passes every hook through, changing only how notifications and one snapshot arrive. */
class ScenarioSink implements Sink<ConformanceRecord> {
  private readonly inner: Sink<ConformanceRecord>;
  constructor(inner: Sink<ConformanceRecord>) {
    this.inner = inner;
  }
  get guarantee() {
    return this.inner.guarantee;
  }
  get capabilities() {
    return this.inner.capabilities;
  }
  open: Sink<ConformanceRecord>["open"] = (context) => this.inner.open(context);
  writeBatch = (batch: Batch<ConformanceRecord>) => this.inner.writeBatch(batch);
  async snapshotState(checkpointId: number): Promise<unknown> {
    if (checkpointId === config.declineCheckpoint) await sleep(config.checkpointTimeoutMs * 2);
    return this.inner.snapshotState(checkpointId);
  }
  async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    if (config.holdCommitsMs) await sleep(config.holdCommitsMs);
    await this.inner.notifyCheckpointComplete(checkpointId);
    if (config.notifications === "duplicate") await this.inner.notifyCheckpointComplete(checkpointId);
    if (config.notifications === "late") {
      for (const late of [checkpointId - 1, checkpointId - 2])
        if (late > 0) await this.inner.notifyCheckpointComplete(late);
    }
  }
  notifyCheckpointAborted = (checkpointId: number) => this.inner.notifyCheckpointAborted(checkpointId);
  close = () => this.inner.close();
}

const factory = await loadSinkFactory(config.sinkModule, config.sinkExport);

const job = new StreamJob({
  name: "conformance",
  parallelism: config.parallelism,
  checkpoint: {
    storage: join(config.scope.dir, CHECKPOINTS),
    intervalMs: config.checkpointIntervalMs,
    timeoutMs: config.checkpointTimeoutMs,
  },
  // The harness restarts the process itself; a short restart delay keeps the job's own
  // timing (which sinks check their transaction timeouts against) small.
  restart: { maxRestarts: 0, maxDelayMs: 1000 },
  logger: silentLogger,
  batchSize: 200,
});
job
  .fromSource(
    new GeneratorSource<ConformanceRecord>({
      name: "conformance",
      count: config.records,
      splits: LANES,
      ratePerSecond: config.ratePerSecond,
      generate: (id) => ({ id, payload: `record-${id}` }),
    }),
    { uid: "source:conformance" },
  )
  .sinkTo(() => new ScenarioSink(factory({ scope: config.scope, options: config.sinkOptions })), { name: SINK_NAME });

let checkpoints = 0;
let declined = 0;
const client = job.start({
  onComplete: () => {
    checkpoints++;
  },
  onDeclined: () => {
    declined++;
  },
});
process.on("SIGTERM", () => {
  client.stop().catch(() => {});
});
const report = (outcome: ChildOutcome) => process.stdout.write(`${OUTCOME_PREFIX}${JSON.stringify(outcome)}\n`);
try {
  await client.result;
  report({ ok: true, checkpoints, declined });
} catch (error) {
  const cause = (error as { cause?: unknown }).cause ?? error;
  const code = (cause as { code?: unknown }).code;
  report({
    ok: false,
    checkpoints,
    declined,
    ...(typeof code === "string" ? { errorCode: code } : {}),
    error: error instanceof Error ? error.message : String(error),
  });
  process.exitCode = 1;
}
