/**
 * The runtime's metrics (core's JobMetrics port) as Prometheus series, with prom-client,
 * served on `/metrics` by the process that runs the job. docs/operating.md lists every series
 * and an alert for each thing that needs one.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { CheckpointResult, FailureKind, JobMetrics, TaskLabels } from "@exactly/core";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** Seconds: a checkpoint or a commit takes milliseconds on local disk, minutes against a slow server. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export class PrometheusMetrics implements JobMetrics {
  readonly registry = new Registry();
  private readonly recordsInTotal: Counter<"stage" | "subtask">;
  private readonly recordsOutTotal: Counter<"stage" | "subtask">;
  private readonly backpressureSeconds: Counter<"stage" | "subtask">;
  private readonly checkpointsTotal: Counter<"result">;
  private readonly checkpointDuration: Histogram;
  private readonly checkpointSize: Gauge;
  private readonly lastCompleted: Gauge;
  private readonly commitLatency: Histogram<"sink" | "subtask">;
  private readonly pending: Gauge<"sink" | "subtask">;
  private readonly restartsTotal: Counter<"kind">;
  /** When each sink subtask's oldest pending transaction began; its age is read at each scrape. */
  private readonly oldestPendingSince = new Map<string, { sink: string; subtask: string; since: number }>();

  constructor(jobName: string) {
    const registers = [this.registry];
    this.registry.setDefaultLabels({ job: jobName });
    collectDefaultMetrics({ register: this.registry });
    this.recordsInTotal = new Counter({
      name: "exactly_records_in_total",
      help: "Records an operator or sink subtask took in.",
      labelNames: ["stage", "subtask"],
      registers,
    });
    this.recordsOutTotal = new Counter({
      name: "exactly_records_out_total",
      help: "Records a source or operator subtask sent on.",
      labelNames: ["stage", "subtask"],
      registers,
    });
    this.backpressureSeconds = new Counter({
      name: "exactly_backpressure_seconds_total",
      help: "Time a subtask waited for room in a full channel downstream.",
      labelNames: ["stage", "subtask"],
      registers,
    });
    this.checkpointsTotal = new Counter({
      name: "exactly_checkpoints_total",
      help: "Checkpoints that ended: completed, declined (timeout, a task declined) or failed (storage).",
      labelNames: ["result"],
      registers,
    });
    this.checkpointDuration = new Histogram({
      name: "exactly_checkpoint_duration_seconds",
      help: "From a checkpoint's trigger to its metadata being durable (completed checkpoints).",
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.checkpointSize = new Gauge({
      name: "exactly_checkpoint_size_bytes",
      help: "Task state bytes the last completed checkpoint stored.",
      registers,
    });
    this.lastCompleted = new Gauge({
      name: "exactly_last_completed_checkpoint_timestamp_seconds",
      help: "Unix time the last checkpoint completed.",
      registers,
    });
    this.commitLatency = new Histogram({
      name: "exactly_commit_latency_seconds",
      help: "From a checkpoint's completion to a sink subtask having committed it.",
      labelNames: ["sink", "subtask"],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.pending = new Gauge({
      name: "exactly_pending_transactions",
      help: "Transactions (or logged checkpoints) a sink subtask holds pre-committed and not yet committed.",
      labelNames: ["sink", "subtask"],
      registers,
    });
    const oldestPendingSince = this.oldestPendingSince;
    new Gauge({
      name: "exactly_oldest_pending_transaction_age_seconds",
      help: "Age of a sink subtask's oldest pending transaction (0 when none); compare with its transaction timeout.",
      labelNames: ["sink", "subtask"],
      registers,
      collect() {
        const now = Date.now();
        this.reset();
        for (const { sink, subtask, since } of oldestPendingSince.values()) {
          this.set({ sink, subtask }, since === 0 ? 0 : (now - since) / 1000);
        }
      },
    });
    this.restartsTotal = new Counter({
      name: "exactly_restarts_total",
      help: "Restarts from the latest checkpoint after a failure, by kind (transient, permanent, other).",
      labelNames: ["kind"],
      registers,
    });
    this.startAtZero();
  }

  /** The `job` label of every series (set before the first scrape). */
  setJobName(jobName: string): void {
    this.registry.setDefaultLabels({ job: jobName });
  }

  /** Series an alert compares (rate of failures, of restarts) exist at zero from the start. */
  private startAtZero(): void {
    for (const result of ["completed", "declined", "failed"] as const) this.checkpointsTotal.inc({ result }, 0);
    for (const kind of ["transient", "permanent", "other"] as const) this.restartsTotal.inc({ kind }, 0);
  }

  recordsIn(task: TaskLabels, count: number): void {
    this.recordsInTotal.inc(stageLabels(task), count);
  }

  recordsOut(task: TaskLabels, count: number): void {
    this.recordsOutTotal.inc(stageLabels(task), count);
  }

  backpressure(task: TaskLabels, seconds: number): void {
    this.backpressureSeconds.inc(stageLabels(task), seconds);
  }

  checkpointEnded(result: CheckpointResult, info: { durationSeconds: number; sizeBytes?: number }): void {
    this.checkpointsTotal.inc({ result });
    if (result !== "completed") return;
    this.checkpointDuration.observe(info.durationSeconds);
    if (info.sizeBytes !== undefined) this.checkpointSize.set(info.sizeBytes);
    this.lastCompleted.set(Date.now() / 1000);
  }

  committed(sink: TaskLabels, seconds: number): void {
    this.commitLatency.observe(sinkLabels(sink), seconds);
  }

  pendingTransactions(sink: TaskLabels, count: number, oldestStartedAt: number | undefined): void {
    const labels = sinkLabels(sink);
    this.pending.set(labels, count);
    this.oldestPendingSince.set(`${labels.sink}/${labels.subtask}`, { ...labels, since: oldestStartedAt ?? 0 });
  }

  restarted(kind: FailureKind): void {
    this.restartsTotal.inc({ kind });
  }

  /** The exposition text, as `/metrics` serves it. */
  async text(): Promise<string> {
    return this.registry.metrics();
  }
}

function stageLabels(task: TaskLabels): { stage: string; subtask: string } {
  return { stage: task.stage, subtask: String(task.subtask) };
}

function sinkLabels(task: TaskLabels): { sink: string; subtask: string } {
  return { sink: task.stage, subtask: String(task.subtask) };
}

export interface MetricsEndpoint {
  /** The port it listens on (the one asked for, or the one the system chose for 0). */
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves `metrics` on `http://<host>:<port>/metrics`; anything else is a 404. The host is
 * 127.0.0.1 unless given: a scraper elsewhere (a pod's) is reached only when asked for.
 */
export async function serveMetrics(
  metrics: PrometheusMetrics,
  port: number,
  host = "127.0.0.1",
): Promise<MetricsEndpoint> {
  const server: Server = createServer((request, response) => {
    if (request.method !== "GET" || request.url?.split("?")[0] !== "/metrics") {
      response.writeHead(404).end();
      return;
    }
    metrics.text().then(
      (text) => response.writeHead(200, { "content-type": metrics.registry.contentType }).end(text),
      (error: unknown) => response.writeHead(500).end(String(error)),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  // Scrapes must never keep a finished job's process alive: neither the listening socket nor
  // a scraper's kept-alive connection (one scraping more often than the keep-alive timeout
  // would otherwise hold it open for ever).
  server.unref();
  server.on("connection", (socket) => socket.unref());
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
