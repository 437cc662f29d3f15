/**
 * Who owns a shard, with an epoch that grows with every new owner (docs/design.md §2, Shards;
 * I9). The lease is one {@link ConditionalRecord}: the owner replaces it every `renewEveryMs`,
 * and a process that wants the shard watches it. Expiry is judged only by the watcher's own
 * monotonic clock — the record's version did not change for `durationMs` while it watched —
 * never by comparing two machines' clocks; then it replaces the record with the next epoch,
 * which only one watcher can do. The epoch is what fences the old owner (its checkpoint head
 * and every sink check it); the lease's timing only decides when a successor may start.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { performance } from "node:perf_hooks";
import { ConfigurationError, ExactlyError, requirePositiveInteger } from "../errors.ts";
import { sleep } from "../util/sleep.ts";
import type { ConditionalRecord } from "./conditional-record.ts";

/** How long a lease lasts unrenewed unless `durationMs` says otherwise. */
export const DEFAULT_LEASE_DURATION_MS = 15_000;

/** What the lease record holds. */
export interface LeaseState {
  readonly epoch: number;
  /** Who holds it: host, process id and a nonce new for every ShardLease. */
  readonly owner: string;
  /** Set by a graceful release: the next process may take the shard at once. */
  readonly released: boolean;
  /** The shard count the owner runs as: a rescale waits only for owners of the layout it replaces. */
  readonly count?: number;
}

export interface ShardLeaseOptions {
  /** How long a watcher waits without seeing a renewal before it takes the shard. Default 15,000 ms. */
  readonly durationMs?: number;
  /** How often the owner renews. Default a third of `durationMs`. */
  readonly renewEveryMs?: number;
  /** How often a watcher reads the record. Default a tenth of `durationMs`, at most 1,000 ms. */
  readonly pollEveryMs?: number;
  /** Default: host name, process id and a random nonce. */
  readonly owner?: string;
  /** The shard count this process runs as, written into the record (LeaseState.count). */
  readonly count?: number;
}

/**
 * Waits until nobody of a layout of `count` shards owns the shard whose lease is `record`: its
 * record is absent, released, held by an owner of another layout, or unchanged for
 * `durationMs` by this process's clock (its owner is gone).
 */
export async function waitUntilUnowned(
  record: ConditionalRecord<LeaseState>,
  count: number,
  timing: { durationMs: number; pollEveryMs: number },
  onWait: (holder: LeaseState) => void,
): Promise<void> {
  let watched: { version: string; since: number } | undefined;
  let told = false;
  for (;;) {
    const startedAt = performance.now();
    const current = await record.read();
    if (!current || current.value.released || current.value.count !== count) return;
    if (watched?.version !== current.version) watched = { version: current.version, since: startedAt };
    else if (performance.now() - watched.since >= timing.durationMs) return;
    if (!told) {
      told = true;
      onWait(current.value);
    }
    await sleep(timing.pollEveryMs);
  }
}

/** The shard was taken by another owner, or this owner could not renew in time: stop committing. */
export class ShardLeaseLostError extends ExactlyError {
  constructor(message: string, options?: ErrorOptions) {
    super("SHARD_LEASE_LOST", message, options);
  }
}

/**
 * The lease of one shard for this process. `acquire` waits while another live owner renews;
 * the owner then calls `renew` on its own timer (`keep` runs that timer) and checks `assertHeld`
 * before every commit.
 */
export class ShardLease {
  readonly durationMs: number;
  readonly renewEveryMs: number;
  readonly pollEveryMs: number;
  readonly owner: string;
  private readonly count: number | undefined;
  private readonly record: ConditionalRecord<LeaseState>;
  private version: string | undefined;
  private held: LeaseState | undefined;
  /** performance.now() when the last successful write began: the owner's lease runs from there. */
  private heldSince = 0;
  private lost: ShardLeaseLostError | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(record: ConditionalRecord<LeaseState>, options: ShardLeaseOptions = {}) {
    this.record = record;
    this.durationMs = requirePositiveInteger("lease.durationMs", options.durationMs ?? DEFAULT_LEASE_DURATION_MS);
    this.renewEveryMs = requirePositiveInteger(
      "lease.renewEveryMs",
      options.renewEveryMs ?? Math.max(1, Math.floor(this.durationMs / 3)),
    );
    if (this.renewEveryMs * 2 > this.durationMs)
      throw new ConfigurationError(
        "lease.renewEveryMs",
        `a renewal every ${this.renewEveryMs} ms leaves no second try within a lease of ${this.durationMs} ms; renew at most every half lease`,
      );
    this.pollEveryMs = requirePositiveInteger(
      "lease.pollEveryMs",
      options.pollEveryMs ?? Math.max(1, Math.min(1000, Math.floor(this.durationMs / 10))),
    );
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
    this.count = options.count;
  }

  /** The epoch this process holds the shard at; undefined before `acquire`. */
  get epoch(): number | undefined {
    return this.held?.epoch;
  }

  /**
   * Takes the shard: at once if nobody held it or its owner released it, otherwise once the
   * record stayed unchanged for `durationMs` by this process's clock. Resolves with the new
   * epoch; rejects when `signal` aborts.
   */
  async acquire(signal?: AbortSignal, onWait?: (holder: LeaseState) => void): Promise<number> {
    let watched: { version: string; since: number } | undefined;
    let told = false;
    for (;;) {
      signal?.throwIfAborted();
      const startedAt = performance.now();
      const current = await this.record.read();
      // Released, or last held by this very process (its renewals failed while the store was
      // down): nobody else can own it under this owner's name, so no need to wait it out.
      let take = current === undefined || current.value.released || current.value.owner === this.owner;
      if (current && !take) {
        if (watched?.version !== current.version) watched = { version: current.version, since: startedAt };
        else if (performance.now() - watched.since >= this.durationMs) take = true;
        if (!take && !told) {
          told = true;
          onWait?.(current.value);
        }
      }
      if (take) {
        const next: LeaseState = {
          epoch: (current?.value.epoch ?? 0) + 1,
          owner: this.owner,
          released: false,
          ...(this.count === undefined ? {} : { count: this.count }),
        };
        const version = await this.record.replace(current?.version, next);
        if (version !== undefined) {
          this.version = version;
          this.held = next;
          this.heldSince = startedAt;
          this.lost = undefined;
          return next.epoch;
        }
        watched = undefined;
      }
      await sleep(this.pollEveryMs);
    }
  }

  /**
   * Renews the lease. Throws {@link ShardLeaseLostError} when another owner replaced the
   * record; an error of the store is thrown as it is (the lease stays held until its time runs out).
   */
  async renew(): Promise<void> {
    const held = this.requireHeld();
    const startedAt = performance.now();
    const version = await this.record.replace(this.version, held);
    if (version === undefined) {
      this.lost = new ShardLeaseLostError(`shard lease taken by another owner (this one held epoch ${held.epoch})`);
      throw this.lost;
    }
    this.version = version;
    this.heldSince = startedAt;
  }

  /**
   * Raises the epoch this process holds the shard at to at least `epoch`: after a rescale the
   * owners of the new layout hold epochs above every old one (shard-layout.ts). Throws
   * {@link ShardLeaseLostError} when another owner took the shard meanwhile.
   */
  async raiseEpoch(epoch: number): Promise<number> {
    const held = this.requireHeld();
    if (held.epoch >= epoch) return held.epoch;
    const next: LeaseState = { ...held, epoch };
    const startedAt = performance.now();
    const version = await this.record.replace(this.version, next);
    if (version === undefined) {
      this.lost = new ShardLeaseLostError(`shard lease taken by another owner (this one held epoch ${held.epoch})`);
      throw this.lost;
    }
    this.version = version;
    this.held = next;
    this.heldSince = startedAt;
    return epoch;
  }

  /**
   * Whether this process may still act as the owner: it renewed within the last
   * `durationMs` (less a tenth for clock drift) and nobody took the shard since.
   */
  isHeld(): boolean {
    return (
      this.held !== undefined && this.lost === undefined && performance.now() - this.heldSince < this.durationMs * 0.9
    );
  }

  /** Throws {@link ShardLeaseLostError} unless {@link isHeld}: called before every commit. */
  assertHeld(): void {
    if (this.isHeld()) return;
    if (this.lost) throw this.lost;
    throw new ShardLeaseLostError(
      this.held
        ? `shard lease at epoch ${this.held.epoch} not renewed for ${Math.round(performance.now() - this.heldSince)} ms (lease ${this.durationMs} ms)`
        : "shard lease not acquired",
    );
  }

  /**
   * Renews every `renewEveryMs` until `release` or `stop`. A renewal that fails with the store
   * unreachable is tried again at the next tick; `onLost` hears once when the lease is lost
   * (taken, or unrenewed for too long).
   */
  keep(onLost: (error: ShardLeaseLostError) => void): void {
    this.stop();
    let told = false;
    const tick = async () => {
      try {
        await this.renew();
      } catch (error) {
        if (error instanceof ShardLeaseLostError) this.lost = error;
      }
      if (!this.isHeld()) {
        if (!told) {
          told = true;
          try {
            this.assertHeld();
          } catch (error) {
            onLost(error as ShardLeaseLostError);
          }
        }
        return;
      }
      this.timer = setTimeout(tick, this.renewEveryMs);
    };
    this.timer = setTimeout(tick, this.renewEveryMs);
  }

  /** Stops renewing (the lease runs out on its own). */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Stops renewing and marks the lease released, so a successor need not wait it out. */
  async release(): Promise<void> {
    this.stop();
    const held = this.held;
    if (!held || this.lost) return;
    this.held = undefined;
    await this.record.replace(this.version, { ...held, released: true });
  }

  /** Lets go of the record's client (a Postgres connection keeps a process alive). */
  async close(): Promise<void> {
    this.stop();
    await this.record.close?.();
  }

  private requireHeld(): LeaseState {
    if (!this.held) throw new ShardLeaseLostError("shard lease not acquired");
    if (this.lost) throw this.lost;
    return this.held;
  }
}
