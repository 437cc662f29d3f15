/**
 * The child process of a scenario run: the job of scenario-job.ts, on one event loop or on
 * worker threads. The child kills itself with SIGKILL
 * (a fault point, or a random kill inside a sink call) or the test process stops it with
 * SIGTERM (graceful stop); it prints a line at each completed checkpoint and an outcome
 * line when it ends by itself.
 */
import { type Logger, loadJob, silentLogger } from "@exactly/core";
import { CHECKPOINT_PREFIX, type ChildConfig, type ChildOutcome, OUTCOME_PREFIX } from "./child-protocol.ts";
import { threadControl } from "./scenario-job.ts";

const config = JSON.parse(process.env.CONFORMANCE_CONFIG ?? "{}") as ChildConfig;
const control = threadControl(config);
/**
 * A sharded child says on stderr who owns the shard (`waiting for shard 0 of 1: …`, `owns
 * shard 0 of 1 at epoch e`) and where it resumed: what the shard scenarios read to know
 * that one process stood by while another owned the shard.
 */
const shardLogger: Logger = {
  info: (message) => {
    if (/shard|resuming/.test(message)) process.stderr.write(`${message}\n`);
  },
  warn: () => {},
  error: () => {},
};
// The module beside this script, as every worker thread imports it again.
const job = await loadJob(
  new URL(import.meta.url.endsWith(".ts") ? "./scenario-job.ts" : "./scenario-job.js", import.meta.url),
  {
    params: { config },
    runtime: { logger: config.leaseMs === undefined ? silentLogger : shardLogger },
    ...(config.leaseMs === undefined ? {} : { shard: { index: 0, count: 1 }, lease: { durationMs: config.leaseMs } }),
  },
);

let declined = 0;
const client = job.start({
  onComplete: (checkpointId) => {
    control.journal({ e: "complete", pid: process.pid, checkpointId });
    // Tells the test process how far the run got (a graceful stop waits for it).
    process.stdout.write(`${CHECKPOINT_PREFIX}${checkpointId}\n`);
    // Arms the fault points of this thread (the coordinator's); sinks on workers arm their own.
    control.sawComplete(checkpointId);
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
  const reason = (error as { reason?: unknown }).reason;
  report({
    ok: false,
    checkpoints: control.completed,
    declined,
    ...(typeof code === "string" ? { errorCode: code } : {}),
    ...(typeof reason === "string" ? { gaveUp: reason } : {}),
    error: error instanceof Error ? error.message : String(error),
  });
  process.exitCode = 1;
}
