// What core gives sinks to fence their writes in a sharded job (I9): the subtask indexes a
// subtask raises at open, the fence bookkeeping over a sink's own store, a commit retry that
// stops at once on a lost shard, and the refusal of a sink that does not say it fences.

import { describe, expect, it } from "vitest";
import {
  AsyncSinkFence,
  ConfigurationError,
  checkShardHead,
  FileSystemCheckpointStorage,
  fencedSubtaskIndexes,
  GeneratorSource,
  JobFailedError,
  ShardFencedError,
  type SinkCapabilities,
  type SinkContext,
  SinkFence,
  StreamJob,
  silentLogger,
  TransientError,
} from "../src/index.ts";
import { ShardCheckpointStorage, withRetry } from "../src/internal.ts";
import { MemorySink, MemoryStore, sinkContextOnDisk, tempDir } from "./helpers.ts";

/** A fence store in a map, as a sink keeps it in its own store: `<index>` to epoch. */
function mapStore() {
  const fences = new Map<number, number | string>();
  return {
    fences,
    store: {
      read: (index: number) => fences.get(index),
      write: (index: number, epoch: number) => {
        fences.set(index, epoch);
      },
    },
  };
}

const owned = (epoch: number): Partial<SinkContext> => ({ ownership: { shard: { index: 0, count: 1 }, epoch } });

describe("SinkFence", () => {
  it("I9: outside a sharded job, check and raise touch nothing", async () => {
    const { fences, store } = mapStore();
    const fence = new SinkFence(await sinkContextOnDisk(), store);
    fences.set(0, 99);
    fence.check();
    fence.raise();
    expect([...fences]).toEqual([[0, 99]]);
  });

  it("I9: raise stores the owner's epoch for every index the subtask restores or cleans up; an older owner's check is then refused", async () => {
    const { fences, store } = mapStore();
    const rescaled = { subtask: 0, parallelism: 2, previousParallelism: 5 };
    new SinkFence(await sinkContextOnDisk({ ...rescaled, ...owned(7) }), store).raise();
    expect([...fences].sort()).toEqual([
      [0, 7],
      [2, 7],
      [3, 7],
      [4, 7],
    ]);
    // The same owner, and a newer one, go on; an older one is refused, naming the fence.
    new SinkFence(await sinkContextOnDisk({ subtask: 0, ...owned(7) }), store).check();
    new SinkFence(await sinkContextOnDisk({ subtask: 0, ...owned(8) }), store).check();
    const older = new SinkFence(await sinkContextOnDisk({ subtask: 0, ...owned(6) }), store);
    expect(() => older.check()).toThrow(ShardFencedError);
    expect(() => older.check()).toThrow(/s-0 is fenced at epoch 7/);
    // An older owner cannot raise over a newer fence either, and leaves it as it was.
    expect(() => older.raise()).toThrow(ShardFencedError);
    expect(fences.get(0)).toBe(7);
  });

  it("I9: a stored value that is not an epoch is refused, never read as 0", async () => {
    const { fences, store } = mapStore();
    fences.set(0, "not-a-number");
    const fence = new SinkFence(await sinkContextOnDisk({ subtask: 0, ...owned(3) }), store);
    expect(() => fence.check()).toThrow(/holds not-a-number, not an epoch/);
  });

  it("I9: the asynchronous form keeps the same rules over an asynchronous store", async () => {
    const { fences, store } = mapStore();
    const async = {
      read: async (i: number) => store.read(i),
      write: async (i: number, e: number) => store.write(i, e),
    };
    await new AsyncSinkFence(await sinkContextOnDisk({ subtask: 1, ...owned(4) }), async).raise();
    expect(fences.get(1)).toBe(4);
    await expect(
      new AsyncSinkFence(await sinkContextOnDisk({ subtask: 1, ...owned(3) }), async).check(),
    ).rejects.toThrow(ShardFencedError);
  });
});

describe("checkShardHead", () => {
  it("I9: refuses an owner once a newer one fenced the shard's head, lets the head's owner and an unsharded job go on", async () => {
    const dir = await tempDir();
    const shard = { index: 0, count: 1 };
    const oldOwner = new ShardCheckpointStorage(new FileSystemCheckpointStorage(dir), shard);
    await oldOwner.claim(1);
    // Before the takeover the old owner holds the head.
    await checkShardHead({ storage: oldOwner, ownership: { shard, epoch: 1 } });
    const successor = new ShardCheckpointStorage(new FileSystemCheckpointStorage(dir), shard);
    await successor.claim(2);
    // The old owner's own storage instance reads the head again, and is refused.
    const refused = checkShardHead({ storage: oldOwner, ownership: { shard, epoch: 1 } });
    await expect(refused).rejects.toThrow(ShardFencedError);
    await expect(refused).rejects.toThrow(/head is at epoch 2, fenced by a newer owner/);
    await checkShardHead({ storage: successor, ownership: { shard, epoch: 2 } });
    // No ownership (an unsharded job): nothing is read or refused.
    await checkShardHead({ storage: oldOwner });
  });
});

describe("a sharded job and a sink that does not declare capabilities.fences", () => {
  /** MemorySink as an author who never fenced writes it: the capabilities without `fences`. */
  class UnfencedSink<T> extends MemorySink<T> {
    override readonly capabilities: SinkCapabilities = { rescale: true, abortsLingering: true };
  }
  const job = async (store: MemoryStore, sharded: boolean) => {
    const j = new StreamJob({
      name: "unfenced",
      parallelism: 2,
      ...(sharded ? { shard: { index: 0, count: 1 } } : {}),
      logger: silentLogger,
      checkpoint: { storage: await tempDir(), intervalMs: 20 },
      restart: { maxRestarts: 0 },
    });
    j.fromSource(new GeneratorSource({ count: 200, splits: 2, generate: (id) => ({ id }) })).sinkTo(
      () => new UnfencedSink(store),
      { name: "out" },
    );
    return j;
  };

  it("I9: is refused before it opens, naming the setting, the sink and what to do; nothing is written", async () => {
    const store = new MemoryStore();
    const error = await (await job(store, true)).execute().catch((e: unknown) => e);
    const cause = error instanceof JobFailedError ? error.cause : error;
    expect(cause).toBeInstanceOf(ConfigurationError);
    expect((cause as ConfigurationError).setting).toBe("shard");
    expect((cause as Error).message).toMatch(/sink out \(UnfencedSink\) does not declare capabilities.fences/);
    expect((cause as Error).message).toContain("Run the job unsharded");
    expect(store.log).toEqual([]);
  });

  it("runs unsharded as before", async () => {
    const store = new MemoryStore();
    await (await job(store, false)).execute();
    expect(store.committed).toHaveLength(200);
  });
});

describe("fencedSubtaskIndexes", () => {
  it("I9: a fresh start or the same layout: only the subtask's own index", () => {
    expect(fencedSubtaskIndexes({ subtask: 2, parallelism: 4, previousParallelism: undefined })).toEqual([2]);
    expect(fencedSubtaskIndexes({ subtask: 2, parallelism: 4, previousParallelism: 4 })).toEqual([2]);
  });

  it("I9: after a rescale down: every old index the subtask restores (j mod p) or cleans up (subtask 0, j ≥ p)", () => {
    expect(fencedSubtaskIndexes({ subtask: 0, parallelism: 2, previousParallelism: 5 })).toEqual([0, 2, 3, 4]);
    expect(fencedSubtaskIndexes({ subtask: 1, parallelism: 2, previousParallelism: 5 })).toEqual([1, 3]);
  });

  it("I9: after a rescale up: the new subtasks fence their own index only", () => {
    expect(fencedSubtaskIndexes({ subtask: 3, parallelism: 4, previousParallelism: 2 })).toEqual([3]);
    expect(fencedSubtaskIndexes({ subtask: 1, parallelism: 4, previousParallelism: 2 })).toEqual([1]);
  });
});

describe("withRetry", () => {
  it("I9: a lost shard is thrown at once, never retried; other transient errors still are", async () => {
    let attempts = 0;
    const fenced = withRetry(
      async () => {
        attempts++;
        throw new ShardFencedError(1, "a newer owner raised the fence");
      },
      () => true,
      { initialDelayMs: 1 },
    );
    await expect(fenced).rejects.toBeInstanceOf(ShardFencedError);
    expect(attempts).toBe(1);

    let tries = 0;
    const result = await withRetry(
      async () => {
        if (++tries < 3) throw new TransientError("passes");
        return "done";
      },
      () => true,
      { initialDelayMs: 1 },
    );
    expect([result, tries]).toEqual(["done", 3]);
  });
});
