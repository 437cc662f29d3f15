/**
 * The demo job (generator → keyBy → keyed numbering → exactly-once rolling files) at
 * parallelism 1, 2 and 4, on one event loop and on worker threads, beside the bare batched
 * loop that does the same work with no runtime (the ceiling). One case per child process:
 *   node test/bench/cases/demo-cases.ts <case> <records> <dir>
 * CPU seconds and peak RSS are the whole process's, every thread included.
 */
import { createWriteStream } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { DeliveryGuarantee, silentLogger } from "@exactly/core";
import { loadDemoJob } from "../../../packages/cli/src/demo/demo-job.ts";
import { executeAndReport, pace, report } from "../bench-protocol.ts";

const [name, recordsArg, dir] = process.argv.slice(2) as [string, string, string];
const records = Number(recordsArg);
const KEYS = 1024;

async function demo(parallelism: number, workers: number): Promise<void> {
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

const cases: Record<string, () => Promise<void>> = {
  "P=1": () => demo(1, 1),
  "P=2, one loop": () => demo(2, 1),
  "P=2, 2 workers": () => demo(2, 2),
  "P=4, one loop": () => demo(4, 1),
  "P=4, 2 workers": () => demo(4, 2),
  "bare batched loop": bareLoop,
};
const run = cases[name];
if (!run) throw new Error(`unknown case ${name}; cases: ${Object.keys(cases).join(", ")}`);
await run();
