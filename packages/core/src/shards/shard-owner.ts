/**
 * What a process does to own its shard for each attempt (docs/design.md §2, Shards): take the
 * lease (waiting while a live owner renews it), fence the checkpoint head with the lease's
 * epoch, keep renewing, and fail the running attempt the moment the lease is lost. The
 * runner (runtime/runner/job-runner.ts) calls `claim` before every attempt restores.
 */
import type { Logger } from "../logger.ts";
import type { ConditionalRecord } from "./conditional-record.ts";
import { LeaseJobOwner, type ShardOwnership } from "./job-owner.ts";
import type { ShardCheckpointStorage } from "./shard-checkpoint-storage.ts";
import type { ShardLayout } from "./shard-layout.ts";
import {
  describeHolder,
  type LeaseState,
  type ShardLease,
  type ShardLeaseLostError,
  waitUntilUnowned,
} from "./shard-lease.ts";
import type { ShardSpec } from "./shard-spec.ts";

export type { ShardOwnership } from "./job-owner.ts";

export class ShardOwner extends LeaseJobOwner {
  readonly storage: ShardCheckpointStorage;
  private readonly logger: Logger;
  /** The lease record of any shard: a rescale waits for the old layout's owners. */
  private readonly leaseOf: (index: number) => ConditionalRecord<LeaseState>;
  /** The lease of the job run without shards: the first layout waits until it no longer runs. */
  private readonly unshardedLease: () => ConditionalRecord<LeaseState>;
  /** The layout generation this process ran in; it never moves the layout back from a newer one. */
  private generation: number | undefined;

  constructor(
    lease: ShardLease,
    storage: ShardCheckpointStorage,
    logger: Logger,
    leaseOf: (index: number) => ConditionalRecord<LeaseState>,
    unshardedLease: () => ConditionalRecord<LeaseState>,
  ) {
    super(lease);
    this.storage = storage;
    this.logger = logger;
    this.leaseOf = leaseOf;
    this.unshardedLease = unshardedLease;
    storage.guardWith(() => lease.assertHeld());
  }

  get shard(): ShardSpec {
    return this.storage.shard;
  }

  /** Waits until this process owns the shard and its checkpoint head; `onLost` hears when it stops owning it. */
  async claim(onLost: (error: ShardLeaseLostError) => void, signal?: AbortSignal): Promise<ShardOwnership> {
    this.onLost = onLost;
    const { index, count } = this.shard;
    if (!this.lease.isHeld()) {
      this.lease.stop();
      const epoch = await this.lease.acquire(signal, (holder) =>
        this.logger.info(
          `waiting for shard ${index} of ${count}: ${describeHolder(holder)} holds it at epoch ${holder.epoch}; taking it if it is not renewed for ${Math.max(this.lease.durationMs, holder.durationMs ?? 0)} ms`,
          { shard: index, holder: holder.owner, epoch: holder.epoch },
        ),
      );
      this.lease.keep((error) => this.onLost?.(error));
      this.logger.info(`owns shard ${index} of ${count} at epoch ${epoch}`, { shard: index, epoch });
    }
    const layout = await this.storage.settleLayout(
      this.generation,
      (message) => this.logger.info(message),
      (old) => this.oldLayoutStopped(old),
    );
    this.generation = layout.generation;
    // Above every epoch of the layouts before, and of whoever fenced this shard's head in a rescale.
    const needed = Math.max(layout.minEpoch, (await this.storage.headEpoch()) ?? 0);
    const epoch = await this.lease.raiseEpoch(needed);
    await this.storage.claim(epoch);
    return { shard: this.shard, epoch };
  }

  /** Waits until no process of the layout being replaced (undefined: the job run without shards) owns any of its shards. */
  private async oldLayoutStopped(old: ShardLayout | undefined): Promise<void> {
    if (!old) {
      await this.untilUnowned(this.unshardedLease(), undefined, (holder) =>
        this.logger.info(
          `first run as ${this.shard.count} shards: waiting until the job run without shards stops (${describeHolder(holder)} holds its checkpoint location)`,
        ),
      );
      return;
    }
    for (let index = 0; index < old.count; index++) {
      if (index === this.shard.index) continue;
      await this.untilUnowned(this.leaseOf(index), old.count, (holder) =>
        this.logger.info(
          `rescaling from ${old.count} to ${this.shard.count} shards: waiting until shard ${index} of ${old.count} stops (${describeHolder(holder)} holds it)`,
        ),
      );
    }
  }

  /** waitUntilUnowned on a record made for it, whose client (a Postgres connection) is let go after. */
  private async untilUnowned(
    record: ConditionalRecord<LeaseState>,
    count: number | undefined,
    onWait: (holder: LeaseState) => void,
  ): Promise<void> {
    try {
      await waitUntilUnowned(record, count, this.lease, onWait);
    } finally {
      await record.close?.();
    }
  }
}
