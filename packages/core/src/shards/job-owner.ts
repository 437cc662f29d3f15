/**
 * What the runner (runtime/runner/job-runner.ts) asks of whatever makes this process the one
 * that runs the job's checkpoints: a shard's owner (shard-owner.ts), or, for a job that is not
 * sharded, the owner of its checkpoint location (location-owner.ts). It claims ownership before
 * every attempt restores, and fails the running attempt the moment ownership is lost.
 */
import type { CheckpointStorage } from "../checkpoint/checkpoint-storage.ts";
import type { ShardLease, ShardLeaseLostError } from "./shard-lease.ts";
import type { ShardSpec } from "./shard-spec.ts";

/** Who owns the shard an attempt runs: sinks get it to fence their writes (SinkContext.ownership). @public */
export interface ShardOwnership {
  readonly shard: ShardSpec;
  readonly epoch: number;
}

export interface JobOwner {
  /** The storage every attempt uses: the owner refuses what it would complete once ownership is lost. */
  readonly storage: CheckpointStorage;
  /**
   * Waits until this process owns what the job writes (or refuses, when another job holds it);
   * `onLost` hears when it stops owning it. Resolves with what sinks fence with, in a sharded job.
   */
  claim(onLost: (error: ShardLeaseLostError) => void, signal?: AbortSignal): Promise<ShardOwnership | undefined>;
  /** Ends the ownership: released, so a successor starts at once. */
  release(): Promise<void>;
  /** Stops renewing without releasing (a failed job: its lease runs out). */
  stop(): Promise<void>;
}

/** What both owners do with their lease at the end: release it, or let it run out. */
export abstract class LeaseJobOwner implements JobOwner {
  abstract readonly storage: CheckpointStorage;
  protected readonly lease: ShardLease;
  /** Told when the lease is lost while an attempt runs; cleared once the job ends. */
  protected onLost: ((error: ShardLeaseLostError) => void) | undefined;

  constructor(lease: ShardLease) {
    this.lease = lease;
  }

  abstract claim(
    onLost: (error: ShardLeaseLostError) => void,
    signal?: AbortSignal,
  ): Promise<ShardOwnership | undefined>;

  /** Ends the ownership: released, so a successor starts at once. */
  async release(): Promise<void> {
    this.onLost = undefined;
    try {
      await this.lease.release();
    } finally {
      await this.lease.close();
    }
  }

  /** Stops renewing without releasing (a failed job: its lease runs out). */
  async stop(): Promise<void> {
    this.onLost = undefined;
    await this.lease.close().catch(() => {});
  }
}
