// The job's metrics in Prometheus format: what the exporter makes of the runtime's reports,
// and /metrics scraped while `exactly demo --metrics-port P` runs.

import { execFile } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runExactly } from "@exactly/testkit/run-cli";
import { afterEach, describe, expect, it, vi } from "vitest";
import { PrometheusMetrics, serveMetrics } from "../src/metrics/prometheus-metrics.ts";

/** The named series the operating guide documents; every one must be served. */
const SERIES = [
  "exactly_records_in_total",
  "exactly_records_out_total",
  "exactly_checkpoints_total",
  "exactly_checkpoint_duration_seconds",
  "exactly_checkpoint_size_bytes",
  "exactly_commit_latency_seconds",
  "exactly_pending_transactions",
  "exactly_oldest_pending_transaction_age_seconds",
  "exactly_restarts_total",
  "exactly_backpressure_seconds_total",
  "exactly_last_completed_checkpoint_timestamp_seconds",
  "process_resident_memory_bytes",
];

/** The value of the first sample of `name` whose labels include every one of `labels`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    const match = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = new Map([...(match[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => have.get(k) === v)) return Number(match[3]);
  }
  return undefined;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("Prometheus metrics", () => {
  it("turns the runtime's reports into the documented series, labelled by job, stage and subtask", async () => {
    const metrics = new PrometheusMetrics("unit-job");
    const source = { stage: "source:gen", subtask: 1 };
    const sink = { stage: "files", subtask: 0 };
    metrics.recordsOut(source, 1024);
    metrics.recordsOut(source, 10);
    metrics.recordsIn(sink, 1034);
    metrics.backpressure(source, 0.25);
    metrics.checkpointEnded("completed", { durationSeconds: 0.04, sizeBytes: 512 });
    metrics.checkpointEnded("declined", { durationSeconds: 60 });
    metrics.committed(sink, 0.02);
    metrics.pendingTransactions(sink, 2, Date.now() - 5000);
    metrics.restarted("transient");
    const text = await metrics.text();
    expect(sample(text, "exactly_records_out_total", { job: "unit-job", stage: "source:gen", subtask: "1" })).toBe(
      1034,
    );
    expect(sample(text, "exactly_records_in_total", { stage: "files", subtask: "0" })).toBe(1034);
    expect(sample(text, "exactly_backpressure_seconds_total", { stage: "source:gen" })).toBe(0.25);
    expect(sample(text, "exactly_checkpoints_total", { result: "completed" })).toBe(1);
    expect(sample(text, "exactly_checkpoints_total", { result: "declined" })).toBe(1);
    // Only completed checkpoints go into the duration histogram.
    expect(sample(text, "exactly_checkpoint_duration_seconds_count")).toBe(1);
    expect(sample(text, "exactly_checkpoint_duration_seconds_bucket", { le: "0.05" })).toBe(1);
    expect(sample(text, "exactly_checkpoint_size_bytes")).toBe(512);
    expect(sample(text, "exactly_commit_latency_seconds_count", { sink: "files", subtask: "0" })).toBe(1);
    expect(sample(text, "exactly_pending_transactions", { sink: "files", subtask: "0" })).toBe(2);
    const age = sample(text, "exactly_oldest_pending_transaction_age_seconds", { sink: "files" }) as number;
    expect(age).toBeGreaterThanOrEqual(5);
    expect(age).toBeLessThan(60);
    expect(sample(text, "exactly_restarts_total", { kind: "transient" })).toBe(1);
    expect(sample(text, "exactly_last_completed_checkpoint_timestamp_seconds")).toBeGreaterThan(Date.now() / 1000 - 60);
    metrics.pendingTransactions(sink, 0, undefined);
    const after = await metrics.text();
    expect(sample(after, "exactly_oldest_pending_transaction_age_seconds", { sink: "files" })).toBe(0);
  });

  it("serves /metrics and answers 404 elsewhere", async () => {
    const metrics = new PrometheusMetrics("unit-job");
    metrics.recordsIn({ stage: "s", subtask: 0 }, 3);
    const endpoint = await serveMetrics(metrics, 0, "127.0.0.1");
    try {
      const response = await fetch(`http://127.0.0.1:${endpoint.port}/metrics`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toContain("text/plain");
      expect(sample(await response.text(), "exactly_records_in_total", { stage: "s" })).toBe(3);
      expect((await fetch(`http://127.0.0.1:${endpoint.port}/other`)).status).toBe(404);
    } finally {
      await endpoint.close();
    }
  });

  it("are served while `exactly demo --metrics-port P` runs, with figures from the running job", async () => {
    const port = await freePort();
    const demo = runExactly(
      "demo",
      ...["--records", "60000", "--kills", "0", "--rate", "10000", "--metrics-port", String(port), "--json"],
    );
    let ended = false;
    demo.then(
      () => {
        ended = true;
      },
      () => {
        ended = true;
      },
    );
    // Scrape until the job has completed and committed checkpoints; keep the last good page.
    let page = "";
    while (!ended) {
      try {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        if ((sample(text, "exactly_commit_latency_seconds_count", { sink: "demo-files" }) ?? 0) >= 2) page = text;
      } catch {
        // The worker is not listening yet, or already gone.
      }
      if (page) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const printed = await demo;
    const summary = JSON.parse(printed.at(-1) as string) as { ok: boolean; lost: number; duplicated: number };
    expect(summary.ok).toBe(true);
    expect(page, "no scrape showed committed checkpoints before the demo ended").not.toBe("");
    for (const name of SERIES)
      expect(page, `${name} is served`).toMatch(new RegExp(`^${name}(_bucket|_count)?[{ ]`, "m"));
    expect(sample(page, "exactly_records_in_total", { job: "exactly-demo", stage: "demo-files" })).toBeGreaterThan(0);
    expect(sample(page, "exactly_records_out_total", { stage: "source:demo-generator" })).toBeGreaterThan(0);
    expect(sample(page, "exactly_checkpoints_total", { result: "completed" })).toBeGreaterThanOrEqual(2);
    expect(sample(page, "exactly_checkpoint_size_bytes")).toBeGreaterThan(0);
    expect(sample(page, "exactly_last_completed_checkpoint_timestamp_seconds")).toBeGreaterThan(0);
    expect(sample(page, "process_resident_memory_bytes", { job: "exactly-demo" })).toBeGreaterThan(0);
  });

  it("are served by a program of one's own, as the operating guide shows it", async () => {
    const port = await freePort();
    const dir = await mkdtemp(join(tmpdir(), "exactly-own-metrics-"));
    const program = fileURLToPath(new URL("../../../docs/operating/own-metrics.ts", import.meta.url));
    let ended = false;
    const run = new Promise<void>((resolve, reject) => {
      execFile(
        process.execPath,
        ["--conditions=@exactly/source", "--disable-warning=ExperimentalWarning", program],
        { cwd: dir, env: { ...process.env, METRICS_PORT: String(port) } },
        (error, _stdout, stderr) => {
          ended = true;
          if (error) reject(new Error(`${error.message}: ${stderr.slice(-2000)}`));
          else resolve();
        },
      );
    });
    let page = "";
    while (!ended && !page) {
      const text = await fetch(`http://127.0.0.1:${port}/metrics`).then(
        (response) => response.text(),
        () => "", // not listening yet, or already gone
      );
      if ((sample(text, "exactly_checkpoints_total", { result: "completed" }) ?? 0) >= 1) page = text;
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await run;
    expect(page, "no scrape showed a completed checkpoint before the program ended").not.toBe("");
    expect(sample(page, "exactly_records_in_total", { job: "orders-to-files", stage: "files" })).toBeGreaterThan(0);
    expect(sample(page, "process_resident_memory_bytes", { job: "orders-to-files" })).toBeGreaterThan(0);
  });
});
