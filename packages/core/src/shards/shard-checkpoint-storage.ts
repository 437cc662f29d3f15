/**
 * The checkpoints of one shard (docs/design.md §2, Shards; I9): `<location>/shard-k/`, with
 * a folder per epoch (`epoch-<e>/chk-<id>/`) so that an old owner never writes where its
 * successor does, and the head (checkpoint-head.ts) deciding which checkpoint is complete.
 * Write-ahead logs stay at the location's root, shared by every shard: their names carry the
 * global subtask index, and after a rescale another shard replays them.
 */

import type {
  CheckpointMetadata,
  CheckpointStorage,
  LogStore,
  RestoredCheckpoint,
  StoredTaskState,
} from "../checkpoint/checkpoint-storage.ts";
import { ConfigurationError } from "../errors.ts";
import { reachFault } from "../faults/fault-points.ts";
import { CheckpointHead, type HeadState, ShardFencedError } from "./checkpoint-head.ts";
import type { ConditionalRecord } from "./conditional-record.ts";
import { loadBase, type ShardLayout, settleLayout } from "./shard-layout.ts";
import type { LeaseState } from "./shard-lease.ts";
import { type ShardSpec, shardName } from "./shard-spec.ts";

type ShardableStorage = CheckpointStorage & Required<Pick<CheckpointStorage, "scoped" | "scopes" | "record" | "load">>;

/** Refuses, naming `checkpoint.storage`, a storage that cannot hold a sharded job's checkpoints. */
export function requireShardable(storage: CheckpointStorage): ShardableStorage {
  if (storage.scoped && storage.scopes && storage.record && storage.load) return storage as ShardableStorage;
  throw new ConfigurationError(
    "checkpoint.storage",
    "a sharded job needs a checkpoint storage with conditional records (a directory, or S3CheckpointStorage); this one has none",
  );
}

/** The folder of one owner's checkpoints in a shard's folder: `epoch-<e>`. */
export const EPOCH_SCOPE = /^epoch-(\d+)$/;

/** @internal */
export class ShardCheckpointStorage implements CheckpointStorage {
  readonly shard: ShardSpec;
  private readonly base: ShardableStorage;
  private readonly own: ShardableStorage;
  private readonly head: CheckpointHead;
  private epoch: number | undefined;
  private current: CheckpointStorage | undefined;
  private layout: ShardLayout | undefined;
  /** Set once this owner's first checkpoint is complete and the folders of older epochs are gone. */
  private olderEpochsRemoved = false;
  /** Asked before a checkpoint completes: throws when this process may no longer act as the owner. */
  private assertOwner: () => void = () => {};

  constructor(base: CheckpointStorage, shard: ShardSpec) {
    this.base = requireShardable(base);
    this.shard = shard;
    this.own = requireShardable(this.base.scoped(shardName(shard)));
    this.head = new CheckpointHead(this.own.record<HeadState>("head"));
  }

  /** Sets the check every completion makes first (the lease's `assertHeld`). */
  guardWith(assertOwner: () => void): void {
    this.assertOwner = assertOwner;
  }

  /** The shard's lease record, beside its checkpoints (the default lease store). */
  leaseRecord(): ConditionalRecord<LeaseState> {
    return this.own.record<LeaseState>("lease");
  }

  /** The layout this shard runs in: the current one, or a new one if the shard count changed (a rescale). */
  async settleLayout(
    knownGeneration: number | undefined,
    log: (message: string) => void,
    stopped: (layout: ShardLayout | undefined) => Promise<void>,
  ): Promise<ShardLayout> {
    this.layout = await settleLayout(this.base, this.shard.count, knownGeneration, log, stopped);
    return this.layout;
  }

  /** The lease of the job run without shards, at the location's root (location-owner.ts). */
  unshardedLeaseRecord(): ConditionalRecord<LeaseState> {
    return this.base.record<LeaseState>("lease");
  }

  /** The lease record of shard `index` beside its checkpoints (the default lease store). */
  leaseRecordOf(index: number): ConditionalRecord<LeaseState> {
    return requireShardable(this.base.scoped(shardName({ index, count: index + 1 }))).record<LeaseState>("lease");
  }

  /** The epoch of the shard's head, if it has one: a new owner holds at least that. */
  async headEpoch(): Promise<number | undefined> {
    return (await this.readHead())?.epoch;
  }

  /**
   * Becomes the owner at `epoch`: fences the head (in the main thread, once per attempt) and
   * writes into the epoch's folder from then on. A worker thread only `enter`s, unfenced.
   */
  async claim(epoch: number): Promise<void> {
    await this.head.fence(epoch);
    this.enter(epoch);
  }

  enter(epoch: number): void {
    if (this.epoch !== epoch) this.olderEpochsRemoved = false;
    this.epoch = epoch;
    this.current = this.own.scoped(`epoch-${epoch}`);
  }

  private get writer(): CheckpointStorage {
    if (!this.current) throw new ShardFencedError(0, "checkpoint storage used before the shard was claimed");
    return this.current;
  }

  async highestCheckpointId(): Promise<number> {
    // Above every id any earlier owner reserved, so no two owners' checkpoints (and the names
    // sinks derive from ids) meet.
    let highest = Math.max(
      this.head.latest?.checkpointId ?? 0,
      ...(this.layout?.base ?? []).map((b) => b.checkpointId),
    );
    for (const scope of await this.own.scopes()) {
      if (EPOCH_SCOPE.test(scope)) highest = Math.max(highest, await this.own.scoped(scope).highestCheckpointId());
    }
    return highest;
  }

  beginCheckpoint(checkpointId: number): Promise<void> {
    return this.writer.beginCheckpoint(checkpointId);
  }

  writeTaskState(checkpointId: number, taskKey: string, state: unknown): Promise<StoredTaskState> {
    return this.writer.writeTaskState(checkpointId, taskKey, state);
  }

  async completeCheckpoint(metadata: CheckpointMetadata): Promise<void> {
    this.assertOwner();
    await this.writer.completeCheckpoint({
      ...metadata,
      shard: this.shard,
      epoch: this.epoch,
      ...(this.layout ? { generation: this.layout.generation } : {}),
    });
    reachFault("before-checkpoint-head");
    await this.head.complete(metadata.checkpointId);
    if (!this.olderEpochsRemoved) {
      this.olderEpochsRemoved = true;
      await this.removeOlderEpochs();
    }
  }

  /**
   * The head names a checkpoint of this epoch now: no restore reads an older epoch's folder
   * again, and the ids of this epoch are above all of theirs. A storage without `removeScope`
   * keeps them.
   */
  private async removeOlderEpochs(): Promise<void> {
    if (!this.own.removeScope) return;
    // A checkpoint the layout's base names stays: another new shard may not have restored it yet.
    const kept = new Set(
      (this.layout?.base ?? []).filter((b) => b.shard === this.shard.index).map((b) => `epoch-${b.epoch}`),
    );
    for (const scope of await this.own.scopes()) {
      const epoch = EPOCH_SCOPE.exec(scope)?.[1];
      if (epoch !== undefined && Number(epoch) < (this.epoch ?? 0) && !kept.has(scope))
        await this.own.removeScope(scope);
    }
  }

  discardCheckpoint(checkpointId: number): Promise<void> {
    return this.writer.discardCheckpoint(checkpointId);
  }

  async markCommitted(checkpointId: number): Promise<void> {
    await this.writer.markCommitted?.(checkpointId);
  }

  /**
   * The checkpoint the head names (a metadata file the head does not name never completed),
   * if it was taken in this layout; otherwise this shard's part of the layout's base.
   */
  async loadLatest(): Promise<RestoredCheckpoint | undefined> {
    // Before the layout is settled (a reader that owns nothing: a tool, the conformance
    // suite's observer): the checkpoint the head names.
    const layout = this.layout;
    const latest = this.head.latest ?? (await this.readHead())?.latest;
    if (latest) {
      const restored = await this.own.scoped(`epoch-${latest.epoch}`).load?.(latest.checkpointId);
      if (!restored)
        throw new ShardFencedError(
          this.epoch ?? 0,
          `checkpoint ${latest.checkpointId} that the head names is missing from epoch-${latest.epoch}`,
        );
      if (!layout || restored.metadata.generation === layout.generation) return restored;
    }
    return layout ? loadBase(this.base, layout.base) : undefined;
  }

  private async readHead(): Promise<HeadState | undefined> {
    return (await this.own.record<HeadState>("head").read())?.value;
  }

  async listCompleted(): Promise<CheckpointMetadata[]> {
    const latest = this.head.latest ?? (await this.readHead())?.latest;
    if (!latest) return [];
    const all = await this.own.scoped(`epoch-${latest.epoch}`).listCompleted();
    return all.filter((m) => m.checkpointId <= latest.checkpointId);
  }

  logStore(namespace: string): LogStore {
    return this.base.logStore(namespace);
  }

  isTransient(error: unknown): boolean {
    return this.base.isTransient?.(error) ?? false;
  }
}
