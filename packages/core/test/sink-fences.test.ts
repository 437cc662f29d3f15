// What core gives sinks to fence their writes in a sharded job (I9): the subtask indexes a
// subtask raises at open, and a commit retry that stops at once on a lost shard.

import { describe, expect, it } from "vitest";
import { fencedSubtaskIndexes, ShardFencedError, TransientError, withRetry } from "../src/index.ts";

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
