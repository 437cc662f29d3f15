// Runs the jobs docs/writing-a-job.md shows, each in this process through loadJob (what
// `exactly run` calls), and checks what they committed against a batch computation over the
// same input: every record's effect exactly once, every key's state counted from 1 without a
// gap. Small inputs, so the whole file takes a few seconds.
import { mkdir, mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadJob, type ShardSpec, silentLogger, type WindowResult } from "@exactly/core";
import { describe, expect, it } from "vitest";
import { CUSTOMERS, ORDERS, order, READINGS, type Reading, reading } from "../src/input.ts";
import type { CustomerTotal } from "../src/order-totals-job.ts";
import type { Mean } from "../src/sensor-windows-job.ts";
import type { WordCount } from "../src/word-count-job.ts";

const jobFile = (file: string) => new URL(`../src/${file}`, import.meta.url);

/** Runs a job module to its end, as `exactly run <file>` does, in a fresh directory; returns the directory. */
async function run(
  file: string,
  params: Record<string, unknown> = {},
  options: { dir?: string; shard?: ShardSpec; workerThreads?: number } = {},
): Promise<string> {
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), "exactly-job-guide-")));
  const job = await loadJob(jobFile(file), {
    params: { dir, ...params },
    runtime: { logger: silentLogger },
    ...(options.shard ? { shard: options.shard } : {}),
  });
  if (options.workerThreads !== undefined) expect(job.workerThreads()).toBe(options.workerThreads);
  await job.execute();
  return dir;
}

/** Every line of the published part files in `dir`: what a reader of the sink's output sees. */
async function committed<T>(dir: string): Promise<T[]> {
  const rows: T[] = [];
  for (const name of (await readdir(dir)).sort()) {
    if (name.startsWith(".")) continue; // a part still being written is a hidden file
    for (const line of (await readFile(join(dir, name), "utf8")).split("\n")) if (line) rows.push(JSON.parse(line));
  }
  return rows;
}

/** The order totals job's output, computed in one batch: one row per placed order, totals running per customer. */
function expectedTotals(): CustomerTotal[] {
  const soFar = new Map<number, { orders: number; cents: number }>();
  const rows: CustomerTotal[] = [];
  for (let id = 0; id < ORDERS; id++) {
    const o = order(id);
    if (o.status === "cancelled") continue;
    const before = soFar.get(o.customer) ?? { orders: 0, cents: 0 };
    const after = { orders: before.orders + 1, cents: before.cents + o.cents };
    soFar.set(o.customer, after);
    rows.push({ customer: o.customer, orderId: id, ...after });
  }
  return rows;
}

const byOrderId = (a: CustomerTotal, b: CustomerTotal) => a.orderId - b.orderId;

describe("docs/writing-a-job.md: order totals, one job module run three ways", () => {
  const expected = expectedTotals();

  it("on one event loop: each placed order once, with its customer's running total", async () => {
    const dir = await run("order-totals-job.ts", { workers: 1 }, { workerThreads: 1 });
    const rows = await committed<CustomerTotal>(join(dir, "out"));
    expect(expected.length).toBe(1_800); // 2,000 orders, every tenth cancelled
    expect(rows.sort(byOrderId)).toEqual(expected);

    // Started again on the same checkpoints, the job resumes after its last checkpoint: the
    // input is all read, so nothing is written twice.
    await run("order-totals-job.ts", { workers: 1 }, { dir });
    expect((await committed<CustomerTotal>(join(dir, "out"))).length).toBe(1_800);
  });

  it("on two worker threads: the same output", async () => {
    const dir = await run("order-totals-job.ts", { workers: 2 }, { workerThreads: 2 });
    expect((await committed<CustomerTotal>(join(dir, "out"))).sort(byOrderId)).toEqual(expected);
  });

  it("as two shards side by side: each writes its own customers, together the same output", async () => {
    const dir = await mkdtemp(join(tmpdir(), "exactly-job-guide-shards-"));
    await Promise.all(
      [0, 1].map((index) => run("order-totals-job.ts", { workers: 1 }, { dir, shard: { index, count: 2 } })),
    );
    expect((await committed<CustomerTotal>(join(dir, "out"))).sort(byOrderId)).toEqual(expected);
    // Each shard keeps its own checkpoints, beside the layout both agreed on.
    expect((await readdir(join(dir, "checkpoints"))).sort()).toEqual(["_layout", "shard-0", "shard-1"]);
    expect(new Set(expected.map((r) => r.customer)).size).toBe(CUSTOMERS);
  });
});

describe("docs/writing-a-job.md: event-time windows", () => {
  it("fire once per sensor and second, complete: the same means and maxima as a batch computation", async () => {
    const dir = await run("sensor-windows-job.ts", { workers: 1 });
    const means = new Map<string, Mean>();
    const maxima = new Map<string, number>();
    for (let i = 0; i < READINGS; i++) {
      const r = reading(i);
      const slot = `${r.sensor}@${r.ts - (r.ts % 1000)}`;
      const m = means.get(slot) ?? { readings: 0, celsius: 0 };
      // The sum for now; divided below, as the job's getResult does.
      means.set(slot, { readings: m.readings + 1, celsius: m.celsius + r.celsius });
      maxima.set(slot, Math.max(maxima.get(slot) ?? Number.NEGATIVE_INFINITY, r.celsius));
    }
    for (const [slot, m] of means) means.set(slot, { readings: m.readings, celsius: m.celsius / m.readings });

    const slots = <V>(rows: WindowResult<string, V>[]) => {
      const seen = new Map<string, V>();
      for (const w of rows) {
        const slot = `${w.key}@${w.start}`;
        expect(seen.has(slot), `window ${slot} written twice`).toBe(false);
        expect(w.end - w.start).toBe(1000);
        seen.set(slot, w.value);
      }
      return seen;
    };
    expect(means.size).toBe(93); // 3 sensors × 31 seconds: the 3,000 readings' times fall in seconds 0 … 30
    expect(slots(await committed<WindowResult<string, Mean>>(join(dir, "means")))).toEqual(means);
    const hottest = slots(await committed<WindowResult<string, Reading>>(join(dir, "maxima")));
    expect(new Map([...hottest].map(([slot, r]) => [slot, r.celsius]))).toEqual(maxima);
  });
});

describe("docs/writing-a-job.md: the file source", () => {
  it("reads every line of every file once: word counts from 1 up to each word's total", async () => {
    const dir = await mkdtemp(join(tmpdir(), "exactly-job-guide-words-"));
    await mkdir(join(dir, "in"));
    const texts = {
      "a.txt": "the quick brown fox\njumps over the lazy dog\n",
      "b.txt": "The dog sleeps\n\nthe fox doesn't",
      ".c.txt": "hidden files are skipped\n",
    };
    for (const [name, text] of Object.entries(texts)) await writeFile(join(dir, "in", name), text);
    await run("word-count-job.ts", { workers: 1 }, { dir });

    const rows = await committed<WordCount>(join(dir, "counts"));
    const totals = new Map<string, number>([
      ["the", 4],
      ["dog", 2],
      ["fox", 2],
      ["quick", 1],
      ["brown", 1],
      ["jumps", 1],
      ["over", 1],
      ["lazy", 1],
      ["sleeps", 1],
      ["doesn't", 1],
    ]);
    expect(rows.length).toBe(15);
    for (const [word, total] of totals) {
      const counts = rows
        .filter((r) => r.word === word)
        .map((r) => r.count)
        .sort((a, b) => a - b);
      expect(counts, word).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    }
    expect(new Set(rows.map((r) => r.word))).toEqual(new Set(totals.keys()));
  });
});
