/**
 * `exactly run <job module>`: runs a user's job with checkpoints, the restart strategy,
 * metrics, a status line and logs, and stops it gracefully on SIGTERM or SIGINT (a final
 * checkpoint and its commit, then exit 0). A second signal exits at once; the next start
 * recovers from the latest checkpoint.
 */
import { hostname } from "node:os";
import { resolve } from "node:path";
import { ConfigurationError, consoleLogger, type Logger, loadJob, noMetrics } from "@exactly/core";
import { shardOfProcess } from "@exactly/core/internal";
import { SingleBar } from "cli-progress";
import { PrometheusMetrics, serveMetrics } from "../metrics/prometheus-metrics.ts";
import { jsonLogger } from "./json-logger.ts";

export interface RunOptions {
  /** The module's export holding the job's `JobModule`. Default `default`. */
  readonly export?: string;
  readonly metricsPort?: number;
  readonly logFormat?: "text" | "json";
  /** Where the metrics server listens; default 127.0.0.1. */
  readonly metricsHost?: string;
  /** `k/N`: run one shard of the job (docs/design.md §2, Shards). */
  readonly shard?: string;
  /** N, with k from the hostname (a StatefulSet pod `name-k`). */
  readonly shards?: number;
  /** The group of a job with repartitions this process runs (docs/design.md §2, Groups). */
  readonly group?: string;
  /** Seconds the job's lease (its shard's, or its checkpoint location's) lasts unrenewed. */
  readonly leaseDuration?: number;
  /** Uids of sources and operators whose checkpointed state the job may start without. */
  readonly allowNonRestoredState?: readonly string[];
}

/** Exit codes: 0 the job ended (or stopped) with its last checkpoint committed; 1 it failed; 2 bad usage or configuration. */
export async function runJobCommand(module: string, options: RunOptions): Promise<number> {
  const logger = options.logFormat === "json" ? jsonLogger(process.stderr) : consoleLogger;
  const exportName = options.export ?? "default";
  const prometheus = options.metricsPort === undefined ? undefined : new PrometheusMetrics(exportName);
  const shard = shardOfProcess({
    shard: options.shard,
    shards: options.shards,
    env: process.env.EXACTLY_SHARD,
    hostname: hostname(),
  });
  const group = options.group ?? (process.env.EXACTLY_GROUP || undefined);
  const job = await loadJob(resolve(module), {
    export: exportName,
    runtime: { logger, metrics: prometheus ?? noMetrics },
    ...(shard ? { shard } : {}),
    ...(group !== undefined ? { group } : {}),
    ...(options.leaseDuration !== undefined ? { lease: { durationMs: Math.round(options.leaseDuration * 1000) } } : {}),
    ...(options.allowNonRestoredState ? { allowNonRestoredState: options.allowNonRestoredState } : {}),
  }).catch((error: unknown) => {
    // The command's flag is the setting the user knows.
    throw error instanceof ConfigurationError && error.setting === "export"
      ? new ConfigurationError("--export", error.message.replace(/^export: /, ""))
      : error;
  });
  if (prometheus && options.metricsPort !== undefined) {
    prometheus.setJobName(job.options.name);
    const endpoint = await serveMetrics(prometheus, options.metricsPort, options.metricsHost);
    logger.info(`metrics on http://${options.metricsHost ?? "127.0.0.1"}:${endpoint.port}/metrics`);
  }

  let lastCheckpoint: number | undefined;
  let completed = 0;
  let committed = 0;
  const client = job.start({
    onComplete: (id) => {
      lastCheckpoint = id;
      completed++;
    },
    onCommitted: () => {
      committed++;
    },
  });
  const status = startStatus(options.logFormat === "json" ? logger : undefined, () => ({
    records: client.execution?.recordsRead ?? 0,
    checkpoint: lastCheckpoint ?? "none",
    pending: completed - committed,
  }));

  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals === 1) {
      logger.info(`${signal}: stopping: a final checkpoint, its commit, then exit (again to exit at once)`);
      client.stop().catch(() => {});
      return;
    }
    logger.warn(`${signal} again: exiting now; the next start recovers from the latest checkpoint`);
    process.exit(signal === "SIGINT" ? 130 : 143);
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  try {
    const result = await client.result;
    status.stop();
    logger.info("job ended", { checkpoints: result.checkpointsCompleted, restarts: result.restarts });
    return 0;
  } catch (error) {
    status.stop();
    logger.error(`job failed: ${error instanceof Error ? error.message : String(error)}`);
    return error instanceof ConfigurationError ? 2 : 1;
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
  }
}

interface Status {
  records: number;
  checkpoint: number | string;
  pending: number;
}

/**
 * The live status: a line redrawn on a terminal, a plain line every 10 s otherwise
 * (cli-progress does both), or a log entry every 10 s with JSON logs.
 */
function startStatus(jsonLog: Logger | undefined, read: () => Status): { stop(): void } {
  const startedAt = Date.now();
  const figures = () => {
    const s = read();
    const seconds = Math.max(0.001, (Date.now() - startedAt) / 1000);
    return { ...s, rate: Math.round(s.records / seconds) };
  };
  if (jsonLog) {
    const timer = setInterval(() => jsonLog.info("status", figures()), 10_000);
    timer.unref();
    return { stop: () => clearInterval(timer) };
  }
  const bar = new SingleBar({
    format: "{records} records | {rate} records/s | last checkpoint {checkpoint} | pending commits {pending}",
    stream: process.stderr,
    noTTYOutput: true,
    notTTYSchedule: 10_000,
    hideCursor: true,
  });
  bar.start(0, 0, figures());
  const timer = setInterval(() => bar.update(0, figures()), 500);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      bar.update(0, figures());
      bar.stop();
    },
  };
}
