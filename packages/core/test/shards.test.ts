// A job as N shards (docs/design.md §2, Shards; I9): the lease and its epochs over the
// file-system conditional record, the checkpoint head that fences an old owner, and shards
// of one job that split its key groups and keep their checkpoints apart.
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  ConfigurationError,
  declareRescale,
  ExactlyError,
  FileSystemCheckpointStorage,
  GeneratorSource,
  JobFailedError,
  type LeaseState,
  ownsKey,
  RecordProcessingError,
  ShardFencedError,
  ShardLeaseLostError,
  type ShardSpec,
  StreamJob,
  silentLogger,
  splitPerKey,
} from "../src/index.ts";
import { CheckpointHead, FileConditionalRecord, type HeadState, ShardLease, shardOfProcess } from "../src/internal.ts";
import { MemorySink, MemoryStore, tempDir } from "./helpers.ts";

const MAX_PARALLELISM = 128;

describe("the shard of a process", () => {
  it("comes from --shard k/N, EXACTLY_SHARD, or --shards N and a StatefulSet hostname name-k; anything else is refused naming the setting", () => {
    expect(shardOfProcess({ shard: "1/3", hostname: "h" })).toEqual({ index: 1, count: 3 });
    expect(shardOfProcess({ env: "2/3", hostname: "h" })).toEqual({ index: 2, count: 3 });
    expect(shardOfProcess({ shards: 3, hostname: "exactly-job-2" })).toEqual({ index: 2, count: 3 });
    expect(shardOfProcess({ hostname: "exactly-job-2" })).toBeUndefined();
    const refused = (given: Parameters<typeof shardOfProcess>[0]) => {
      try {
        shardOfProcess(given);
      } catch (error) {
        return (error as ConfigurationError).setting;
      }
      return undefined;
    };
    expect(refused({ shards: 3, hostname: "worker" })).toBe("--shards");
    expect(refused({ shards: 3, hostname: "exactly-job-3" })).toBe("--shards");
    expect(refused({ shard: "3/3", hostname: "h" })).toBe("--shard");
    expect(refused({ env: "0-3", hostname: "h" })).toBe("EXACTLY_SHARD");
    expect(refused({ shard: "0/3", env: "0/3", hostname: "h" })).toBe("--shard");
  });
});

describe("a shard lease", () => {
  it("is taken at once when nobody holds it or its owner released it, each owner at a higher epoch", async () => {
    const record = new FileConditionalRecord<LeaseState>(join(await tempDir(), "lease"));
    const first = new ShardLease(record, { durationMs: 60_000 });
    expect(await first.acquire()).toBe(1);
    expect(first.isHeld()).toBe(true);
    await first.release();
    const second = new ShardLease(record, { durationMs: 60_000 });
    expect(await second.acquire()).toBe(2);
    expect((await record.read())?.value).toMatchObject({ epoch: 2, owner: second.owner, released: false });
  });

  it("is not taken while its owner renews it; once renewals stop it goes to the watcher at the next epoch, and the old owner's renewal is refused", async () => {
    const record = new FileConditionalRecord<LeaseState>(join(await tempDir(), "lease"));
    const owner = new ShardLease(record, { durationMs: 600, renewEveryMs: 100, pollEveryMs: 50 });
    await owner.acquire();
    owner.keep(() => {});
    const watcher = new ShardLease(record, { durationMs: 600, renewEveryMs: 100, pollEveryMs: 50 });
    const waiting = watcher.acquire();
    let taken = false;
    void waiting.then(() => {
      taken = true;
    });
    // Three lease durations of renewals: the watcher keeps waiting.
    for (let i = 0; i < 18; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(taken).toBe(false);
      expect(owner.isHeld()).toBe(true);
    }
    owner.stop();
    expect(await waiting).toBe(2);
    await expect(owner.renew()).rejects.toBeInstanceOf(ShardLeaseLostError);
    expect(owner.isHeld()).toBe(false);
    expect(() => owner.assertHeld()).toThrow(ShardLeaseLostError);
    watcher.stop();
  });

  it("of two processes started at once for the same shard, exactly one takes it", async () => {
    const record = new FileConditionalRecord<LeaseState>(join(await tempDir(), "lease"));
    const leases = Array.from({ length: 6 }, () => new ShardLease(record, { durationMs: 60_000 }));
    const abort = new AbortController();
    const won = await Promise.race(leases.map((lease) => lease.acquire(abort.signal).then(() => lease)));
    await new Promise((resolve) => setTimeout(resolve, 300));
    abort.abort();
    expect(leases.filter((lease) => lease.isHeld())).toEqual([won]);
    expect(won.epoch).toBe(1);
  });

  it("is refused, naming lease.owner, to a second process given the same owner name while the first renews it; a same-named successor of a stopped owner takes it after the lease", async () => {
    const record = new FileConditionalRecord<LeaseState>(join(await tempDir(), "lease"));
    const timing = { owner: "orders-0", durationMs: 600, renewEveryMs: 100, pollEveryMs: 50 };
    const first = new ShardLease(record, timing);
    expect(await first.acquire()).toBe(1);
    first.keep(() => {});
    const second = new ShardLease(record, timing);
    const refused = await second.acquire().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ConfigurationError);
    expect((refused as ConfigurationError).setting).toBe("lease.owner");
    expect(first.isHeld()).toBe(true);
    expect((await record.read())?.value.epoch).toBe(1);
    // The owner's process is gone (its renewals stopped, the one under way landed): a new one
    // under its name takes over.
    first.stop();
    for (let seen = (await record.read())?.version; ; ) {
      await new Promise((resolve) => setTimeout(resolve, 2 * timing.renewEveryMs));
      const now = (await record.read())?.version;
      if (now === seen) break;
      seen = now;
    }
    const restarted = new ShardLease(record, timing);
    expect(await restarted.acquire()).toBe(2);
    restarted.stop();
  });

  it("keeps epochs strictly increasing: the next owner of an epoch at 2^53 − 1 is refused, and so is a hand-edited epoch that is not a safe non-negative integer, naming the record", async () => {
    const dir = await tempDir();
    const record = new FileConditionalRecord<LeaseState>(join(dir, "lease"));
    await record.replace(undefined, { epoch: Number.MAX_SAFE_INTEGER - 1, owner: "earlier", released: true });
    const last = new ShardLease(record, { durationMs: 60_000 });
    expect(await last.acquire()).toBe(Number.MAX_SAFE_INTEGER);
    await last.release();
    const refused = await new ShardLease(record, { durationMs: 60_000 }).acquire().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ExactlyError);
    expect((refused as Error).message).toContain(join(dir, "lease"));
    expect((await record.read())?.value.epoch).toBe(Number.MAX_SAFE_INTEGER);
    for (const [i, epoch] of [1.5, -1, "7", 2 ** 53, null].entries()) {
      const edited = new FileConditionalRecord<LeaseState>(join(dir, `edited-${i}`));
      await edited.replace(undefined, { epoch: epoch as number, owner: "by hand", released: true });
      const error = await new ShardLease(edited, { durationMs: 60_000 }).acquire().catch((e: unknown) => e);
      expect(error, `epoch ${epoch}`).toBeInstanceOf(ExactlyError);
      expect((error as Error).message).toContain(join(dir, `edited-${i}`));
    }
  });
});

describe("a shard's checkpoint head", () => {
  it("refuses the old owner's completion once a successor fenced it, and refuses a fence by an older epoch", async () => {
    const record = new FileConditionalRecord<HeadState>(join(await tempDir(), "head"));
    const old = new CheckpointHead(record);
    expect(await old.fence(1)).toBeUndefined();
    await old.complete(5);
    const successor = new CheckpointHead(record);
    expect(await successor.fence(2)).toEqual({ checkpointId: 5, epoch: 1 });
    await expect(old.complete(6)).rejects.toBeInstanceOf(ShardFencedError);
    await successor.complete(7);
    expect((await record.read())?.value).toEqual({ epoch: 2, latest: { checkpointId: 7, epoch: 2 } });
    await expect(new CheckpointHead(record).fence(1)).rejects.toBeInstanceOf(ShardFencedError);
  });
});

/**
 * Keys by the global source subtask that reads them: the generator deals index i to split
 * i mod 4, and at 2 shards × parallelism 2 global subtask s reads split s, so record i gets a
 * key of key-group range i mod 4 — the input is partitioned by key, as a sharded keyed job needs.
 */
const KEYS_BY_SUBTASK = Array.from({ length: 4 }, (_, s) =>
  Array.from({ length: 400 }, (_, k) => k)
    .filter((k) => ownsKey({ index: s, count: 4 }, k, MAX_PARALLELISM))
    .slice(0, 20),
);

function keyOf(id: number): number {
  return (KEYS_BY_SUBTASK[id % 4] as number[])[Math.floor(id / 4) % 20] as number;
}

/** Shard `shard` of a keyed job with a per-key count; `foreignAt` gets a key of the other shard. */
function shardedJob(storage: string, shard: ShardSpec, store: MemoryStore, options: { foreignAt?: number } = {}) {
  const job = new StreamJob({
    name: "sharded",
    parallelism: 2,
    maxParallelism: MAX_PARALLELISM,
    shard,
    workers: 1,
    logger: silentLogger,
    checkpoint: { storage, intervalMs: 20 },
    restart: { maxRestarts: 0 },
  });
  job
    .fromSource(
      new GeneratorSource({
        count: 4000,
        splits: 4,
        generate: (id) => ({ id, key: id === options.foreignAt ? keyOf(id + 2) : keyOf(id) }),
      }),
    )
    .keyBy((r) => r.key)
    .process<{ id: number; key: number; n: number }, number>({
      processElement(r, ctx) {
        const n = (ctx.state.value() ?? 0) + 1;
        ctx.state.update(n);
        ctx.emit({ ...r, n });
      },
    })
    .sinkTo(() => new MemorySink(store), { name: "out" });
  return job;
}

describe("a job run as shards", () => {
  it("splits the key groups between its shards: together they write every record once with exact per-key counts, each shard's checkpoints under shard-k/ with global subtasks", async () => {
    const dir = await tempDir();
    const stores = [new MemoryStore(), new MemoryStore()];
    await Promise.all(
      [0, 1].map((index) => shardedJob(dir, { index, count: 2 }, stores[index] as MemoryStore).execute()),
    );
    const rows = stores.flatMap((s) => s.committed as Array<{ id: number; key: number; n: number }>);
    expect(rows.map((r) => r.id).sort((a, b) => a - b)).toEqual(Array.from({ length: 4000 }, (_, i) => i));
    const perKey = new Map<number, number[]>();
    for (const r of rows) perKey.set(r.key, [...(perKey.get(r.key) ?? []), r.n]);
    for (const [, ns] of perKey) expect(ns.sort((a, b) => a - b)).toEqual(ns.map((_, i) => i + 1));
    // Each shard wrote only its own keys.
    for (const index of [0, 1])
      for (const r of (stores[index] as MemoryStore).committed as Array<{ key: number }>)
        expect(ownsKey({ index, count: 2 }, r.key, MAX_PARALLELISM)).toBe(true);

    expect((await readdir(dir)).sort()).toEqual(["_layout", "shard-0", "shard-1"]);
    // A run's epochs begin at its first layout's clock (shard-layout.ts).
    const epochName = (await readdir(join(dir, "shard-1"))).find((n) => n.startsWith("epoch-")) as string;
    const epoch = Number(epochName.slice("epoch-".length));
    expect(epoch).toBeGreaterThan(1_700_000_000_000);
    const epochDir = join(dir, "shard-1", epochName);
    const last = (await readdir(epochDir))
      .filter((n) => n.startsWith("chk-"))
      .sort()
      .at(-1) as string;
    const metadata = JSON.parse(await readFile(join(epochDir, last, "_metadata"), "utf8"));
    expect(metadata.shard).toEqual({ index: 1, count: 2 });
    expect(metadata.epoch).toBe(epoch);
    // Shard 1 of 2 at parallelism 2 runs global subtasks 2 and 3 of 4.
    expect(metadata.stages.out.parallelism).toBe(4);
    expect(
      Object.keys(metadata.taskStates)
        .filter((k) => k.startsWith("out/"))
        .sort(),
    ).toEqual(["out/2", "out/3"]);
  });

  it("fails the job naming the record's position when a keyed stage receives a key another shard owns", async () => {
    // Record 1000 is read by global subtask 0 (shard 0) and gets a key of subtask 2's range (shard 1).
    const error = await shardedJob(await tempDir(), { index: 0, count: 2 }, new MemoryStore(), { foreignAt: 1000 })
      .execute()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobFailedError);
    const cause = (error as JobFailedError).cause;
    expect(cause).toBeInstanceOf(RecordProcessingError);
    expect((cause as RecordProcessingError).position).toMatchObject({ offset: 1000 });
    expect((cause as Error).message).toContain("belongs to shard 1 of 2");
  });

  it("rescales by restart, 2 → 3 → 1: each layout restores its keys from the old shards' latest checkpoints, and every per-key sequence and count stays exact", async () => {
    const dir = await tempDir();
    const store = new MemoryStore();
    const KEYS = 23;
    const RECORDS = 30_000;
    // A split per key, read by the subtask owning the key: partitioned input at any shard count.
    const job = (shard: ShardSpec) => {
      const j = new StreamJob({
        name: "rescaled",
        parallelism: 2,
        maxParallelism: MAX_PARALLELISM,
        shard,
        workers: 1,
        logger: silentLogger,
        checkpoint: { storage: dir, intervalMs: 20 },
        // A lease lost to a stalled event loop (a loaded machine) is restarted from, as in production.
        restart: { initialDelayMs: 10, maxDelayMs: 50 },
        // Lost shards' leases run out before the next layout can take their shards.
        lease: { durationMs: 1500 },
      });
      j.fromSource(
        new GeneratorSource({
          count: RECORDS,
          splits: KEYS,
          splitOwner: splitPerKey(MAX_PARALLELISM),
          ratePerSecond: 20_000,
          generate: (id) => ({ id, key: id % KEYS }),
        }),
      )
        .keyBy((r) => r.key)
        .process<{ id: number; key: number; n: number }, number>({
          processElement(r, ctx) {
            const n = (ctx.state.value() ?? 0) + 1;
            ctx.state.update(n);
            ctx.emit({ ...r, n });
          },
        })
        .sinkTo(() => new MemorySink(store), { name: "out" });
      return j;
    };
    const committedCount = () => store.committed.length;
    const runFor = async (count: number, until: number, end: "cancel" | "stop") => {
      const completed = new Array<number>(count).fill(0);
      const clients = Array.from({ length: count }, (_, index) =>
        job({ index, count }).start({
          onComplete: () => {
            completed[index] = (completed[index] ?? 0) + 1;
          },
        }),
      );
      // A shard that failed for good ends the test at once, rather than at its timeout.
      let failed: unknown;
      for (const c of clients) c.result.catch((error: unknown) => (failed ??= error));
      // Every shard has a checkpoint of its own before the layout ends: a rescale needs one of each.
      while (committedCount() < until || completed.some((n) => n < 2)) {
        if (failed !== undefined) throw failed;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      if (end === "stop") await Promise.all(clients.map((c) => c.stop()));
      else {
        for (const c of clients) c.cancel();
        await Promise.allSettled(clients.map((c) => c.result));
      }
    };
    // Two shards lost mid-run (their pending work left behind), three stopped with a final checkpoint, one to the end.
    const storage = new FileSystemCheckpointStorage(dir);
    await runFor(2, 6_000, "cancel");
    await declareRescale(storage, 3);
    await runFor(3, 15_000, "stop");
    await declareRescale(storage, 1);
    const last = await job({ index: 0, count: 1 }).execute();
    expect(last.restoredCheckpointId).toBeGreaterThan(0);

    const rows = store.committed as Array<{ id: number; key: number; n: number }>;
    expect(rows.map((r) => r.id).sort((a, b) => a - b)).toEqual(Array.from({ length: RECORDS }, (_, i) => i));
    for (let key = 0; key < KEYS; key++) {
      const ns = rows.filter((r) => r.key === key).map((r) => r.n);
      expect(
        ns.sort((a, b) => a - b),
        `key ${key}`,
      ).toEqual(ns.map((_, i) => i + 1));
    }
    expect(store.prepared.size).toBe(0);
  });

  it("refuses a process whose shard count is not the layout's unless a rescale to it was declared, a process of an older layout included; a declared rescale back to an earlier count restores every key exactly", async () => {
    const dir = await tempDir();
    const store = new MemoryStore();
    const KEYS = 13;
    const RECORDS = 6_000;
    const job = (shard: ShardSpec) => {
      const j = new StreamJob({
        name: "declared",
        parallelism: 1,
        maxParallelism: MAX_PARALLELISM,
        shard,
        workers: 1,
        logger: silentLogger,
        checkpoint: { storage: dir, intervalMs: 20 },
        restart: { initialDelayMs: 10, maxDelayMs: 50 },
        lease: { durationMs: 1500 },
      });
      j.fromSource(
        new GeneratorSource({
          count: RECORDS,
          splits: KEYS,
          splitOwner: splitPerKey(MAX_PARALLELISM),
          ratePerSecond: 10_000,
          generate: (id) => ({ id, key: id % KEYS }),
        }),
      )
        .keyBy((r) => r.key)
        .process<{ id: number; key: number; n: number }, number>({
          processElement(r, ctx) {
            const n = (ctx.state.value() ?? 0) + 1;
            ctx.state.update(n);
            ctx.emit({ ...r, n });
          },
        })
        .sinkTo(() => new MemorySink(store), { name: "out" });
      return j;
    };
    const layout = async () =>
      (await new FileConditionalRecord<{ count: number; generation: number }>(join(dir, "_layout")).read())?.value;
    /** Runs `count` shards until each completed two checkpoints, then stops them with a final one. */
    const runAndStop = async (count: number) => {
      const completed = new Array<number>(count).fill(0);
      const clients = Array.from({ length: count }, (_, index) =>
        job({ index, count }).start({
          onComplete: () => {
            completed[index] = (completed[index] ?? 0) + 1;
          },
        }),
      );
      let failed: unknown;
      for (const c of clients) c.result.catch((error: unknown) => (failed ??= error));
      while (completed.some((n) => n < 2)) {
        if (failed !== undefined) throw failed;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await Promise.all(clients.map((c) => c.stop()));
    };
    const refusal = async (shard: ShardSpec) => {
      const error = await job(shard)
        .execute()
        .catch((e: unknown) => e);
      expect(error, `shard ${shard.index}/${shard.count}`).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).setting).toBe("shard");
      return (error as Error).message;
    };

    await runAndStop(2);
    expect(await refusal({ index: 0, count: 3 })).toContain("exactly rescale");
    expect(await layout()).toMatchObject({ count: 2, generation: 1 });

    const storage = new FileSystemCheckpointStorage(dir);
    await declareRescale(storage, 3);
    await runAndStop(3);
    expect(await layout()).toMatchObject({ count: 3, generation: 2 });
    // A process of the layout before, started again: it never moves the layout back.
    await refusal({ index: 1, count: 2 });
    expect(await layout()).toMatchObject({ count: 3, generation: 2 });

    await declareRescale(storage, 2);
    await Promise.all([0, 1].map((index) => job({ index, count: 2 }).execute()));
    expect(await layout()).toMatchObject({ count: 2, generation: 3 });
    const rows = store.committed as Array<{ id: number; key: number; n: number }>;
    expect(rows.map((r) => r.id).sort((a, b) => a - b)).toEqual(Array.from({ length: RECORDS }, (_, i) => i));
    for (let key = 0; key < KEYS; key++) {
      const ns = rows.filter((r) => r.key === key).map((r) => r.n);
      expect(
        ns.sort((a, b) => a - b),
        `key ${key}`,
      ).toEqual(ns.map((_, i) => i + 1));
    }
  });
});
