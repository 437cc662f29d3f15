/**
 * Which part of a checkpoint each subtask of a new attempt gets, at the same or another
 * parallelism (docs/design.md §2, Change of parallelism): every rescale rule lives here.
 *
 * - keyed state: subtask i takes the key groups of its contiguous range;
 * - source positions: every reader gets every old subtask's positions and keeps its splits;
 * - sink state: old subtask j's state goes to new subtask j mod parallelism;
 * - lingering work: each old subtask index is cleaned up by exactly one new subtask.
 */

import type { RestoredCheckpoint } from "../../checkpoint/checkpoint-storage.ts";
import { keyGroupRange } from "../../operators/key-groups.ts";
import type { KeyedStateSnapshot } from "../../operators/keyed-state.ts";
import { firstGlobalSubtask, globalParallelism } from "../../shards/shard-spec.ts";
import type { JobGraph, StageNode } from "../api/job-graph.ts";

/** The key a subtask's state is stored and acknowledged under. */
export function taskKey(stage: StageNode, subtask: number): string {
  return `${stage.id}/${subtask}`;
}

/**
 * Where a subtask sits in the whole job: in a sharded job (§2, Shards) shard k runs global
 * subtasks k·p … k·p+p−1 of a stage of parallelism p, out of N·p; every rule below, the
 * task keys and everything a source, operator or sink is told use the global numbers, so
 * states and names of two shards never meet and a rescale redistributes them as any other.
 */
export function globalSubtaskOf(
  graph: JobGraph,
  stage: StageNode,
  subtask: number,
): { subtask: number; parallelism: number } {
  return {
    subtask: firstGlobalSubtask(graph.shard, stage.parallelism) + subtask,
    parallelism: globalParallelism(graph.shard, stage.parallelism),
  };
}

/** Every task key this process's part of the job acknowledges, as the coordinator expects them. */
export function allTaskKeys(graph: JobGraph): Set<string> {
  const keys = new Set<string>();
  for (const stage of graph.stages)
    for (let i = 0; i < stage.parallelism; i++) keys.add(taskKey(stage, globalSubtaskOf(graph, stage, i).subtask));
  return keys;
}

/** The restored states of one stage, by old subtask index (holes where a subtask stored none). */
export function restoredStatesOf(restored: RestoredCheckpoint | undefined, stage: StageNode): unknown[] {
  if (!restored) return [];
  const old = restored.metadata.stages[stage.id];
  if (!old) return [];
  const states: unknown[] = [];
  for (let i = 0; i < old.parallelism; i++) states.push(restored.states.get(taskKey(stage, i)));
  return states;
}

/**
 * A reader's restored positions: splits move freely between subtasks, so every old
 * subtask's positions go to every reader, which keeps the splits it owns. Undefined on a
 * fresh start.
 */
export function sourcePositionsFor(old: readonly unknown[]): Map<string, unknown> | undefined {
  if (old.length === 0) return undefined;
  const positions = new Map<string, unknown>();
  for (const state of old)
    for (const [split, position] of Object.entries((state ?? {}) as object)) positions.set(split, position);
  return positions;
}

/**
 * A keyed operator's share: the key groups of its range, and every old snapshot (the
 * operator keeps the groups in its range).
 */
export function keyedStateFor(
  old: readonly unknown[],
  subtask: number,
  parallelism: number,
  maxParallelism: number,
): { keyGroups: { start: number; end: number }; restored: KeyedStateSnapshot[] } {
  return {
    keyGroups: keyGroupRange(subtask, parallelism, maxParallelism),
    restored: old.filter((s) => s !== undefined) as KeyedStateSnapshot[],
  };
}

/** A sink subtask's restored states: old subtask j's state goes to new subtask j mod parallelism. */
export function sinkStatesFor(old: readonly unknown[], subtask: number, parallelism: number): unknown[] {
  return old.filter((s, j) => s !== undefined && j % parallelism === subtask);
}

/**
 * Whether new subtask `subtask` cleans up the lingering work of old subtask index `index`:
 * its own, and subtask 0 also takes every index at or above the new parallelism (left by a
 * larger old run). Exactly one subtask owns each index, so no two clean up the same work.
 * @internal
 */
export function ownsSubtaskIndex(subtask: number, parallelism: number, index: number): boolean {
  return index === subtask || (subtask === 0 && index >= parallelism);
}
