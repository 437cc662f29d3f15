/**
 * The demo job in a child process, so the parent can kill it with SIGKILL. It talks to the
 * parent over IPC: progress, checkpoints, restarts, and the end.
 */
import { consoleLogger, type StreamJob, silentLogger } from "@exactly/core";
import { PrometheusMetrics, serveMetrics } from "../metrics/prometheus-metrics.ts";
import { loadDemoJob } from "./demo-job.ts";
import { DEMO_JOB_NAME, type DemoJobConfig } from "./demo-job-config.ts";
import { DEMO_CONFIG_VARIABLE, type WorkerMessage } from "./demo-protocol.ts";

const config = JSON.parse(process.env[DEMO_CONFIG_VARIABLE] ?? "{}") as DemoJobConfig;
delete process.env[DEMO_CONFIG_VARIABLE];
const send = (message: WorkerMessage) => process.send?.(message);

// Every thread running a generator subtask raises it (demo-job.ts).
const generated = new SharedArrayBuffer(4);
const progress = new Int32Array(generated);
let checkpoints = 0;

async function setUp() {
  // Served from here, the process running the job: its process metrics are the job's.
  const metrics = config.metricsPort === undefined ? undefined : new PrometheusMetrics(DEMO_JOB_NAME);
  if (metrics) await serveMetrics(metrics, config.metricsPort as number);
  const job = await loadDemoJob(config, {
    logger: process.env.EXACTLY_DEMO_VERBOSE ? consoleLogger : silentLogger,
    ...(metrics ? { metrics } : {}),
    generated,
  });
  return { job, workers: job.workerThreads() };
}

// A failure before the job runs (its metrics port taken, say) ends the demo as the job's own
// failures do: a message to the demo, which names it in one line, and no stack trace here.
const ready = await setUp().catch((error: unknown) => {
  send({ type: "failed", error: error instanceof Error ? error.message : String(error) });
  process.exitCode = 1;
  process.disconnect?.();
  return undefined;
});
if (ready) run(ready.job, ready.workers);

function run(job: StreamJob, workers: number): void {
  const client = job.start({
    onStart: ({ attempt, restoredCheckpointId }) => send({ type: "started", attempt, restoredCheckpointId, workers }),
    onComplete: () => {
      checkpoints++;
    },
    onRestart: ({ error }) =>
      send({ type: "restarted", error: error instanceof Error ? error.message : String(error) }),
  });

  // SIGTERM is a graceful stop: a final checkpoint and its commit (the sharded demo's rescale).
  process.on("SIGTERM", () => {
    client.stop().catch(() => {});
  });

  // The demo process is gone (killed with its terminal, or alone): stop at once, as a crash
  // would, so that a rerun of the demo on the same --out never runs beside this worker.
  let ending = false;
  process.on("disconnect", () => {
    if (!ending) process.exit(1);
  });

  const report = () =>
    send({
      type: "progress",
      generated: Atomics.load(progress, 0),
      checkpoints,
      maxRssKb: process.resourceUsage().maxRSS,
    });
  const timer = setInterval(report, 20);

  client.result.then(
    (result) => {
      clearInterval(timer);
      report();
      send({ type: "finished", checkpoints, restarts: result.restarts });
      ending = true;
      process.disconnect?.();
    },
    (error: unknown) => {
      clearInterval(timer);
      send({ type: "failed", error: error instanceof Error ? error.message : String(error) });
      process.exitCode = 1;
      ending = true;
      process.disconnect?.();
    },
  );
}
