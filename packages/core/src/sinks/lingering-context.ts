import { ownsSubtaskIndex } from "../runtime/engine/restore-assignment.ts";
import type { SinkContext } from "./sink.ts";

/**
 * What a sink subtask may clean up after a restore, and what it must spare. The two-phase
 * and write-ahead bases build this once in `open`, before any recovery call, and hand the
 * same object to every hook that needs it (docs/design.md §2, Recovery; I4 in §3).
 * @public
 */
export interface LingeringContext<REF> {
  readonly sinkId: string;
  readonly subtask: number;
  readonly parallelism: number;
  readonly previousParallelism: number | undefined;
  /** 0 on a fresh start. Work named with a higher checkpoint id was begun after it. */
  readonly restoredCheckpointId: number;
  /**
   * Everything any restored subtask state references (pending or open), of every old
   * subtask: never touch these, another subtask is about to commit or abort them.
   */
  readonly referenced: readonly REF[];
  /**
   * Whether this subtask cleans up work left under subtask index `index`: its own, and
   * subtask 0 also takes every index at or above the current parallelism (left by a larger
   * old run). Exactly one subtask owns each index, so no two clean up the same work.
   */
  ownsSubtaskIndex(index: number): boolean;
}

/** The lingering context of a sink subtask, given what its restored states reference. */
export function lingeringContext<REF>(context: SinkContext, referenced: readonly REF[]): LingeringContext<REF> {
  const { sinkId, subtask, parallelism, previousParallelism } = context;
  return {
    sinkId,
    subtask,
    parallelism,
    previousParallelism,
    restoredCheckpointId: context.restoredCheckpointId ?? 0,
    referenced,
    ownsSubtaskIndex: (index) => ownsSubtaskIndex(subtask, parallelism, index),
  };
}
