/**
 * Which fences a sink subtask raises when it opens in a sharded job (docs/design.md §2,
 * Shards; I9 in §3). A sink keeps one fence per (sink, global subtask index), holding the
 * epoch of the newest owner, and checks it inside every write that can become visible or
 * linger. At open, after recovery committed the restored pending work and aborted the
 * lingering work, it raises to its own epoch the fence of its own index and of every old
 * index whose work it restores (`j mod parallelism`) or cleans up (`ownsSubtaskIndex`): an
 * old owner still writing under any of them is then refused.
 */
import { ownsSubtaskIndex } from "../runtime/engine/restore-assignment.ts";
import type { SinkContext } from "./sink.ts";

/** The subtask indexes whose fences this subtask raises at open, ascending. */
export function fencedSubtaskIndexes(
  context: Pick<SinkContext, "subtask" | "parallelism" | "previousParallelism">,
): number[] {
  const { subtask, parallelism } = context;
  const indexes = new Set([subtask]);
  for (let j = 0; j < (context.previousParallelism ?? 0); j++) {
    if (j % parallelism === subtask || ownsSubtaskIndex(subtask, parallelism, j)) indexes.add(j);
  }
  return [...indexes].sort((a, b) => a - b);
}
