/**
 * The file connector's benchmark cases, run one per child process:
 *   node test/bench/cases/file-cases.ts <case> <records> <dir>
 */
import { createWriteStream } from "node:fs";
import { open, rename } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { DeliveryGuarantee, GeneratorSource, StreamJob, silentLogger } from "@exactly/core";
import { fsyncDirectory } from "@exactly/core/internal";
import { localFileSink } from "@exactly/file";
import { benchRecord, executeAndReport, pace, report } from "../bench-protocol.ts";

const [name, recordsArg, dir] = process.argv.slice(2) as [string, string, string];
const records = Number(recordsArg);
const encode = (r: ReturnType<typeof benchRecord>) => JSON.stringify(r);

async function framework(guarantee: DeliveryGuarantee): Promise<void> {
  const job = new StreamJob({
    name: `bench-${name}`,
    checkpoint: { storage: join(dir, ".checkpoints"), intervalMs: Number(process.env.BENCH_INTERVAL_MS ?? 1000) },
    logger: silentLogger,
  });
  job
    .fromSource(new GeneratorSource({ count: records, ...pace, generate: benchRecord }))
    .sinkTo(() => localFileSink({ directory: dir, guarantee, encoder: encode }), { name: "bench" });
  await executeAndReport(job, records);
}

/** The baseline: the same lines through one write stream, fsynced once at the end. */
async function raw(): Promise<void> {
  const started = performance.now();
  const path = join(dir, "raw.jsonl");
  const stream = createWriteStream(path);
  let chunk: string[] = [];
  for (let id = 0; id < records; id++) {
    chunk.push(`${encode(benchRecord(id))}\n`);
    if (chunk.length === 1024) {
      if (!stream.write(chunk.join(""))) await new Promise<void>((r) => stream.once("drain", () => r()));
      chunk = [];
    }
  }
  stream.end(chunk.join(""));
  await new Promise<void>((r) => stream.once("finish", () => r()));
  const handle = await open(path, "r+");
  await handle.sync();
  await handle.close();
  report({ records, seconds: (performance.now() - started) / 1000, checkpointMs: [] });
}

/**
 * What a user would write for exactly-once without a framework: every batch is a
 * "transaction" of its own — temp file, fsync, rename, then the source offset written
 * atomically beside it.
 */
async function naive(): Promise<void> {
  const started = performance.now();
  const batch = 1000;
  for (let start = 0; start < records; start += batch) {
    const lines: string[] = [];
    for (let id = start; id < Math.min(records, start + batch); id++) lines.push(`${encode(benchRecord(id))}\n`);
    const tmp = join(dir, `.part-${start}.tmp`);
    const handle = await open(tmp, "w");
    await handle.writeFile(lines.join(""));
    await handle.sync();
    await handle.close();
    await rename(tmp, join(dir, `part-${start}.jsonl`));
    const offset = await open(join(dir, ".offset.tmp"), "w");
    await offset.writeFile(String(start + batch));
    await offset.sync();
    await offset.close();
    await rename(join(dir, ".offset.tmp"), join(dir, ".offset"));
    await fsyncDirectory(dir);
  }
  report({ records, seconds: (performance.now() - started) / 1000, checkpointMs: [] });
}

const cases: Record<string, () => Promise<void>> = {
  "exactly-once": () => framework(DeliveryGuarantee.EXACTLY_ONCE),
  "at-least-once": () => framework(DeliveryGuarantee.AT_LEAST_ONCE),
  raw,
  naive,
};
const run = cases[name];
if (!run) throw new Error(`unknown case ${name}; cases: ${Object.keys(cases).join(", ")}`);
await run();
