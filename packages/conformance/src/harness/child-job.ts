/**
 * The child process of a scenario run: the job of scenario-job.ts, on one event loop or on
 * worker threads. The child kills itself with SIGKILL
 * (a fault point, or a random kill inside a sink call) or the test process stops it with
 * SIGTERM (graceful stop); it prints a line at each completed checkpoint and an outcome
 * line when it ends by itself.
 */
import { loadJob, silentLogger } from "@exactly/core";
import { CHECKPOINT_PREFIX, type ChildConfig, type ChildOutcome, OUTCOME_PREFIX } from "./child-protocol.ts";
import { threadControl } from "./scenario-job.ts";

const config = JSON.parse(process.env.CONFORMANCE_CONFIG ?? "{}") as ChildConfig;
const control = threadControl(config);
// The module beside this script, as every worker thread imports it again.
const job = await loadJob(
  new URL(import.meta.url.endsWith(".ts") ? "./scenario-job.ts" : "./scenario-job.js", import.meta.url),
  {
    params: { config },
    runtime: { logger: silentLogger },
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
  report({
    ok: false,
    checkpoints: control.completed,
    declined,
    ...(typeof code === "string" ? { errorCode: code } : {}),
    error: error instanceof Error ? error.message : String(error),
  });
  process.exitCode = 1;
}
