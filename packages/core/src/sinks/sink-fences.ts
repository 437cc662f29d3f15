/**
 * A sink's fences in a sharded job (docs/design.md §2, Shards; I9 in §3). A sink keeps one
 * fence per (sink, global subtask index) in its own store, holding the epoch of the newest
 * owner, and checks it inside every write that can become visible or linger. At open, after
 * recovery committed the restored pending work and aborted the lingering work, it raises to
 * its own epoch the fence of its own index and of every old index whose work it restores
 * (`j mod parallelism`) or cleans up (`ownsSubtaskIndex`): an old owner still writing under
 * any of them is then refused. {@link SinkFence} does this bookkeeping over two statements of
 * the sink's own store; the sink runs them inside its own transactions, which is what makes
 * the check and the write one atomic step.
 */
import { ownsSubtaskIndex } from "../runtime/engine/restore-assignment.ts";
import { ShardFencedError } from "../shards/checkpoint-head.ts";
import { ShardCheckpointStorage } from "../shards/shard-checkpoint-storage.ts";
import type { SinkContext } from "./sink.ts";

/** The subtask indexes whose fences this subtask raises at open, ascending. @public */
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

/** An epoch as a store returns it: a number, a bigint or numeric text; none yet as null or undefined. @public */
export type StoredEpoch = number | bigint | string | null | undefined;

/**
 * Where a sink keeps its fences: one epoch per subtask index of this sink, in the same store
 * as its data, so that a fence is read and written in the transaction that writes the data.
 * Synchronous for a synchronous client (`node:sqlite`); see {@link AsyncFenceStore}.
 * @public
 */
export interface FenceStore {
  /** The epoch stored for this sink's subtask `index`; null or undefined if never raised. */
  read(index: number): StoredEpoch;
  /** Stores `epoch` for this sink's subtask `index` (insert or replace). */
  write(index: number, epoch: number): void;
}

/** A {@link FenceStore} over an asynchronous client. @public */
export interface AsyncFenceStore {
  read(index: number): Promise<StoredEpoch>;
  write(index: number, epoch: number): Promise<void>;
}

/**
 * One sink subtask's fences, over its own store. In a sharded job: call {@link check} inside
 * every transaction that writes (begin, write, pre-commit, commit), and {@link raise} once
 * recovery is done (`TwoPhaseCommitSink.raiseFences`), both in a transaction of the store.
 * Outside a sharded job both do nothing, so the same sink runs either way.
 * @public
 */
export class SinkFence {
  private readonly context: SinkContext;
  private readonly store: FenceStore;

  constructor(context: SinkContext, store: FenceStore) {
    this.context = context;
    this.store = store;
  }

  /** Refuses, with {@link ShardFencedError}, when a newer owner raised this subtask's fence. */
  check(): void {
    const epoch = this.context.ownership?.epoch;
    if (epoch === undefined) return;
    refuseIfNewer(this.context, this.context.subtask, this.store.read(this.context.subtask), epoch);
  }

  /** Raises the fence of every index this subtask restored or cleaned up to its epoch, refusing if one is newer. */
  raise(): void {
    const epoch = this.context.ownership?.epoch;
    if (epoch === undefined) return;
    for (const index of fencedSubtaskIndexes(this.context)) {
      refuseIfNewer(this.context, index, this.store.read(index), epoch);
      this.store.write(index, epoch);
    }
  }
}

/** {@link SinkFence} over an asynchronous client: the same calls, awaited. @public */
export class AsyncSinkFence {
  private readonly context: SinkContext;
  private readonly store: AsyncFenceStore;

  constructor(context: SinkContext, store: AsyncFenceStore) {
    this.context = context;
    this.store = store;
  }

  async check(): Promise<void> {
    const epoch = this.context.ownership?.epoch;
    if (epoch === undefined) return;
    refuseIfNewer(this.context, this.context.subtask, await this.store.read(this.context.subtask), epoch);
  }

  async raise(): Promise<void> {
    const epoch = this.context.ownership?.epoch;
    if (epoch === undefined) return;
    for (const index of fencedSubtaskIndexes(this.context)) {
      refuseIfNewer(this.context, index, await this.store.read(index), epoch);
      await this.store.write(index, epoch);
    }
  }
}

/**
 * For a sink whose fence is the shard's checkpoint head (the file sinks): refuses, with
 * {@link ShardFencedError}, once a newer owner fenced the head. The head already keeps an old
 * owner from completing a checkpoint, so nothing of its becomes visible; checked at
 * pre-commit, it also fails the old owner's snapshot, so the attempt fails and `close`
 * removes what it wrote after the takeover instead of leaving it for the next recovery. The
 * successor fences the head before its recovery looks for lingering work, so whatever an old
 * owner made before it read the head is there for that cleanup to find. One read of the head
 * per call; outside a sharded job it does nothing.
 * @public
 */
export async function checkShardHead(context: Pick<SinkContext, "ownership" | "storage">): Promise<void> {
  const epoch = context.ownership?.epoch;
  if (epoch === undefined || !(context.storage instanceof ShardCheckpointStorage)) return;
  const head = await context.storage.headEpoch();
  if (head !== undefined && head > epoch) {
    throw new ShardFencedError(epoch, `the shard's checkpoint head is at epoch ${head}, fenced by a newer owner`);
  }
}

function refuseIfNewer(context: SinkContext, index: number, stored: StoredEpoch, epoch: number): void {
  if (stored === null || stored === undefined) return;
  const fence = Number(stored);
  if (!Number.isSafeInteger(fence)) {
    throw new ShardFencedError(epoch, `the fence of ${context.sinkId}-${index} holds ${String(stored)}, not an epoch`);
  }
  if (fence > epoch) {
    throw new ShardFencedError(epoch, `${context.sinkId}-${index} is fenced at epoch ${fence} by a newer owner`);
  }
}
