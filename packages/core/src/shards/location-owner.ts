/**
 * One job per checkpoint location at a time (docs/design.md §2, Recovery): a job that is not
 * sharded holds its location with the lease a shard holds its shard with, as a shard of one,
 * in a record `_lease` at the location's root. The checkpoints stay where they always were.
 *
 * A second job on a held location — another copy of the job, or another job — is refused,
 * naming the location and the holder, once it sees the holder renew; it never waits as a
 * standby, since nothing but a crash ends a running job's hold. A holder that stopped
 * renewing is taken over after the lease's duration, at the next epoch (a process on this
 * machine that is gone, at once); a graceful end releases the location. And a process that has
 * not renewed within 0.9 × the lease (paused, partitioned) begins and completes no checkpoint.
 */
import type { CheckpointStorage } from "../checkpoint/checkpoint-storage.ts";
import { ConfigurationError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { ConditionalRecord } from "./conditional-record.ts";
import { LeaseJobOwner } from "./job-owner.ts";
import type { ShardLayout } from "./shard-layout.ts";
import { describeHolder, type LeaseState, type ShardLease, type ShardLeaseLostError } from "./shard-lease.ts";

/** Another process runs a job on this checkpoint location: this one does not start. @public */
export class LocationHeldError extends ConfigurationError {
  readonly location: string;
  readonly holder: LeaseState;
  constructor(location: string, holder: LeaseState) {
    super(
      "checkpoint.storage",
      `${location} is held by ${describeHolder(holder)} at epoch ${holder.epoch}, which renews it: another job, or another copy of this one, runs on this checkpoint location. ` +
        "Stop it first, or give this job a location of its own",
    );
    this.location = location;
    this.holder = holder;
  }
}

/** The location a storage stands for, as its user gave it: a directory, an s3:// URL. */
export function describeLocation(storage: CheckpointStorage, fallback: string): string {
  const { location, directory } = storage as { location?: unknown; directory?: unknown };
  if (typeof location === "string") return location;
  if (typeof directory === "string") return directory;
  return fallback;
}

export class LocationOwner extends LeaseJobOwner {
  readonly storage: CheckpointStorage;
  readonly location: string;
  private readonly logger: Logger;

  constructor(lease: ShardLease, storage: CheckpointStorage, location: string, logger: Logger) {
    super(lease);
    this.location = location;
    this.logger = logger;
    this.storage = guarded(storage, () => lease.assertHeld());
  }

  async claim(onLost: (error: ShardLeaseLostError) => void, signal?: AbortSignal): Promise<undefined> {
    this.onLost = onLost;
    if (this.lease.isHeld()) return undefined;
    this.lease.stop();
    await this.refuseShardedLocation();
    const epoch = await this.lease.acquire(
      signal,
      (holder) =>
        this.logger.info(
          `checkpoint location ${this.location}: ${describeHolder(holder)} holds it at epoch ${holder.epoch}; this job starts if it is not renewed for ${Math.max(this.lease.durationMs, holder.durationMs ?? 0)} ms, and is refused if it is`,
          { holder: holder.owner, epoch: holder.epoch },
        ),
      (holder) => {
        throw new LocationHeldError(this.location, holder);
      },
    );
    this.lease.keep((error) => this.onLost?.(error));
    this.logger.info(`holds checkpoint location ${this.location} at epoch ${epoch}`, { epoch });
    return undefined;
  }

  /**
   * A job started without a shard reads the checkpoints at the location's root, not a sharded
   * run's: on a location a sharded run moved on from, it would start from stale ones, beside
   * the shards.
   */
  private async refuseShardedLocation(): Promise<void> {
    const layout = (await this.storage.record?.<ShardLayout>("layout").read())?.value;
    if (!layout) return;
    throw new ConfigurationError(
      "shard",
      `${this.location} holds the checkpoints of the job run as ${layout.count} shards (layout generation ${layout.generation}), which a job started without a shard does not read: ` +
        `run it as shards; to leave sharding, run \`exactly rescale <checkpoint location> 1\` and start it as --shard 0/1`,
    );
  }
}

/**
 * The storage, refusing to begin or complete a checkpoint unless the lease is held (a process
 * paused past its lease must reserve and complete nothing, as a shard's head write refuses it).
 * A proxy rather than a wrapper class: every method the storage has, and only those, stays.
 */
function guarded(storage: CheckpointStorage, assertHeld: () => void): CheckpointStorage {
  return new Proxy(storage, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      const method = value as (...args: unknown[]) => unknown;
      if (property === "beginCheckpoint" || property === "completeCheckpoint")
        return async (...args: unknown[]) => {
          assertHeld();
          return method.apply(target, args);
        };
      return method.bind(target);
    },
  });
}

/** The record the unsharded job's lease is kept in by default: `_lease` at the location's root. */
export function locationLeaseRecord(storage: CheckpointStorage): ConditionalRecord<LeaseState> | undefined {
  return storage.record?.<LeaseState>("lease");
}
