/**
 * The demo job (generator → keyBy → keyed numbering → exactly-once rolling files) at
 * parallelism 1, 2 and 4, on one event loop and on worker threads, beside the bare batched
 * loop that does the same work with no runtime (the ceiling of one thread), and two P=1
 * processes side by side on half the records each (the ceiling of P=2 on this machine's
 * cores: nothing crosses, nothing is shared). And the job as shards (docs/design.md §2,
 * Shards): one shard, and two shard processes side by side on the same records — each reads
 * the keys of its key groups — beside that ceiling: what the lease, the checkpoint head and
 * the lane-per-key input cost. One case per child process:
 *   node test/bench/cases/demo-cases.ts <case> <records> <dir>
 * CPU seconds and peak RSS are the whole process's, every thread included.
 */
import { createWriteStream } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { DeliveryGuarantee, silentLogger } from "@exactly/core";
import { loadDemoJob } from "../../../packages/cli/src/demo/demo-job.ts";
import { type CaseResult, executeAndReport, pace, report, reportTogether, runCaseProcess } from "../bench-protocol.ts";

const [name, recordsArg, dir] = process.argv.slice(2) as [string, string, string];
const records = Number(recordsArg);
const KEYS = 1024;

async function demo(parallelism: number, workers: number, shard?: { index: number; count: number }): Promise<void> {
  const job = await loadDemoJob(
    {
      records,
      out: dir,
      parallelism,
      workers,
      guarantee: DeliveryGuarantee.EXACTLY_ONCE,
      checkpointIntervalMs: Number(process.env.BENCH_INTERVAL_MS ?? 1000),
      keys: KEYS,
      ratePerSecond: pace.ratePerSecond,
      ...(shard ? { shard, leaseMs: 2_000 } : {}),
    },
    { logger: silentLogger },
  );
  await executeAndReport(job, records);
}

/** The same records numbered per key and written as the demo's lines, in batches, by one loop. */
async function bareLoop(): Promise<void> {
  const started = performance.now();
  const path = join(dir, "bare.jsonl");
  const stream = createWriteStream(path);
  const seqs = new Int32Array(KEYS);
  for (let start = 0; start < records; start += 1024) {
    const lines: string[] = [];
    for (let id = start; id < Math.min(records, start + 1024); id++) {
      const key = id % KEYS;
      const seq = ++(seqs[key] as number);
      lines.push(`{"id":${id},"key":${key},"seq":${seq}}\n`);
    }
    if (!stream.write(lines.join(""))) await new Promise<void>((r) => stream.once("drain", () => r()));
  }
  stream.end();
  await new Promise<void>((r) => stream.once("finish", () => r()));
  const handle = await open(path, "r+");
  await handle.sync();
  await handle.close();
  report({ records, seconds: (performance.now() - started) / 1000, checkpointMs: [] });
}

/** A case in a child process of its own (P=1 by default), on `count` records in `subdir`. */
async function p1Process(count: number, subdir: string, name = "P=1"): Promise<CaseResult & { startedAt: number }> {
  const spawnedAt = performance.now();
  const args = [...process.execArgv, fileURLToPath(import.meta.url), name, String(count), join(dir, subdir)];
  const result = await runCaseProcess(process.execPath, args, process.env, "a P=1 process");
  // Its startup counts from its own start, which is about when it was spawned.
  return { ...result, startedAt: spawnedAt + (result.startupMs ?? 0) };
}

/**
 * Two P=1 processes at once, each on half the records: from the first one's records flowing
 * to the last one's last commit, CPU and peak RSS summed over both. A P=1 run already keeps
 * part of the second core busy (its file writes in the thread pool, its collector's helpers),
 * so this, not 2×, is what P=2 on 2 cores could reach if crossing and sharing a process cost
 * nothing.
 */
async function twoProcesses(): Promise<void> {
  const half = Math.ceil(records / 2);
  await reportTogether(records, [p1Process(half, "process-0"), p1Process(records - half, "process-1")]);
}

/** Shard 0 and shard 1 of 2 at once, in one checkpoint location and output, each on its half of the keys. */
async function twoShards(): Promise<void> {
  await reportTogether(records, [p1Process(records, "job", "shard 0/2"), p1Process(records, "job", "shard 1/2")]);
}

const cases: Record<string, () => Promise<void>> = {
  "P=1": () => demo(1, 1),
  "P=2, one loop": () => demo(2, 1),
  "P=2, 2 workers": () => demo(2, 2),
  "P=4, one loop": () => demo(4, 1),
  "P=4, 2 workers": () => demo(4, 2),
  "bare batched loop": bareLoop,
  "2 processes, P=1 each": twoProcesses,
  "1 shard, P=1": () => demo(1, 1, { index: 0, count: 1 }),
  "2 shards, P=1 each": twoShards,
  "shard 0/2": () => demo(1, 1, { index: 0, count: 2 }),
  "shard 1/2": () => demo(1, 1, { index: 1, count: 2 }),
};
const run = cases[name];
if (!run) throw new Error(`unknown case ${name}; cases: ${Object.keys(cases).join(", ")}`);
await run();
