/**
 * Who owns a shard, with an epoch that grows with every new owner (docs/design.md §2, Shards;
 * I9); a job that is not sharded holds its checkpoint location with the same lease, as a shard
 * of one (location-owner.ts). The lease is one {@link ConditionalRecord}: the owner replaces it
 * every `renewEveryMs`, and a process that wants the shard watches it. Expiry is judged only by
 * the watcher's own monotonic clock — the record's version did not change for `durationMs`
 * while it watched — never by comparing two machines' clocks; then it replaces the record with
 * the next epoch, which only one watcher can do. A holder on the same machine whose process is
 * gone is not waited for (lease-holder.ts). The epoch is what fences the old owner (its
 * checkpoint head and every sink check it); the lease's timing only decides when a successor
 * may start.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { performance } from "node:perf_hooks";
import { ConfigurationError, ExactlyError, requirePositiveInteger } from "../errors.ts";
import { sleep } from "../util/sleep.ts";
import {
  type ConditionalRecord,
  describeRecord,
  InvalidRecordError,
  type VersionedValue,
} from "./conditional-record.ts";
import {
  holderState,
  holdInThisThread,
  type LeaseHolderProcess,
  letGoInThisThread,
  thisHolderProcess,
} from "./lease-holder.ts";

/** How long a lease lasts unrenewed unless `durationMs` says otherwise. */
export const DEFAULT_LEASE_DURATION_MS = 15_000;

/** What the lease record holds. @public */
export interface LeaseState {
  readonly epoch: number;
  /** Who holds it: the `owner` it was given, or host, process id and its nonce. */
  readonly owner: string;
  /** New for every ShardLease: two processes given one owner name are still told apart. */
  readonly nonce?: string;
  /** Set by a graceful release: the next process may take the shard at once. */
  readonly released: boolean;
  /** The shard count the owner runs as: a rescale waits only for owners of the layout it replaces. */
  readonly count?: number;
  /** The holder's lease duration: a watcher given a shorter one still waits this long. */
  readonly durationMs?: number;
  /** The name of the job holding it, for messages. */
  readonly job?: string;
  /** Where the holder runs: on the same machine, a holder whose process is gone is not waited for. */
  readonly process?: LeaseHolderProcess;
}

/** The greatest epoch: the next would not be a distinct number (2^53 + 1 is 2^53 as a double). */
const LAST_EPOCH = Number.MAX_SAFE_INTEGER;

/** Refuses, naming the record, an epoch exactly never writes: not a whole number from 0 to 2^53 − 1. */
export function requireEpoch(epoch: unknown, where: string, field = "epoch"): number {
  if (typeof epoch !== "number" || !Number.isSafeInteger(epoch) || epoch < 0)
    throw new InvalidRecordError(
      where,
      `${field} ${JSON.stringify(epoch)} is not a whole number from 0 to 2^53 − 1; exactly never writes one (was the record edited by hand?)`,
    );
  return epoch;
}

/** The epoch after `epoch`; refused, naming the record, past the last one a number holds exactly. */
export function nextEpoch(epoch: number, where: string): number {
  if (epoch >= LAST_EPOCH)
    throw new InvalidRecordError(
      where,
      `no epoch follows ${epoch}, the last whole number a double holds exactly (2^53 − 1), so no new owner could fence the old one. ` +
        "Epochs begin at the clock's milliseconds and grow by one per owner, so one this high was written by hand or by a clock far ahead",
    );
  return epoch + 1;
}

/** The record's value, checked: what exactly never writes is refused, naming the record. */
function requireLeaseState(value: unknown, where: string): LeaseState {
  const invalid = (what: string) => new InvalidRecordError(where, `not a lease record: ${what}`);
  if (typeof value !== "object" || value === null) throw invalid(`${JSON.stringify(value)}`);
  const state = value as Record<string, unknown>;
  requireEpoch(state.epoch, where);
  if (typeof state.owner !== "string") throw invalid(`owner ${JSON.stringify(state.owner)}`);
  if (typeof state.released !== "boolean") throw invalid(`released ${JSON.stringify(state.released)}`);
  if (state.nonce !== undefined && typeof state.nonce !== "string")
    throw invalid(`nonce ${JSON.stringify(state.nonce)}`);
  for (const field of ["count", "durationMs"] as const) {
    const n = state[field];
    if (n !== undefined && (typeof n !== "number" || !Number.isSafeInteger(n) || n < 1))
      throw invalid(`${field} ${JSON.stringify(n)}`);
  }
  return value as LeaseState;
}

/** Reads a lease record, refusing a value exactly never writes. */
async function readLease(
  record: ConditionalRecord<LeaseState>,
  where: string,
): Promise<VersionedValue<LeaseState> | undefined> {
  const current = await record.read();
  if (current) requireLeaseState(current.value, where);
  return current;
}

/** How a holder reads in messages: its owner name, and its job's when the record has one. */
export function describeHolder(holder: LeaseState): string {
  return holder.job === undefined ? holder.owner : `${holder.owner} (job ${JSON.stringify(holder.job)})`;
}

/** The timing of a lease, and the name it records for this process. @public */
export interface ShardLeaseOptions {
  /** How long a watcher waits without seeing a renewal before it takes the shard. Default 15,000 ms. */
  readonly durationMs?: number;
  /** How often the owner renews. Default a third of `durationMs`. */
  readonly renewEveryMs?: number;
  /** How often a watcher reads the record. Default a tenth of `durationMs`, at most 1,000 ms. */
  readonly pollEveryMs?: number;
  /**
   * A name for this process in the record and the logs (a pod's name, say). Default: host name,
   * process id and a random nonce. Two processes given one name are still told apart: the
   * second is refused while the first renews (ConfigurationError naming `lease.owner`).
   */
  readonly owner?: string;
  /** The shard count this process runs as, written into the record (LeaseState.count). */
  readonly count?: number;
  /** The job's name, written into the record (LeaseState.job). */
  readonly job?: string;
  /** How the record is named in errors, if it cannot say itself (ConditionalRecord.describe). */
  readonly where?: string;
  /** What the lease is, in messages. Default "shard lease". */
  readonly label?: string;
}

/**
 * Waits until nobody of a layout of `count` shards (undefined: the job run without shards) owns
 * the lease `record`: it is absent, released, held by an owner of another layout, held by a
 * process of this machine that is gone, or unchanged for `durationMs` (or its holder's, if
 * longer) by this process's clock (its owner is gone).
 */
export async function waitUntilUnowned(
  record: ConditionalRecord<LeaseState>,
  count: number | undefined,
  timing: { durationMs: number; pollEveryMs: number },
  onWait: (holder: LeaseState) => void,
): Promise<void> {
  let watched: { version: string; since: number } | undefined;
  let told = false;
  const where = describeRecord(record, "a lease record");
  for (;;) {
    const startedAt = performance.now();
    const current = await readLease(record, where);
    if (!current || current.value.released || current.value.count !== count) return;
    if ((await holderState(current.value.process, current.value.nonce)) === "gone") return;
    if (watched?.version !== current.version) watched = { version: current.version, since: startedAt };
    else if (performance.now() - watched.since >= Math.max(timing.durationMs, current.value.durationMs ?? 0)) return;
    if (!told) {
      told = true;
      onWait(current.value);
    }
    await sleep(timing.pollEveryMs);
  }
}

/** The shard was taken by another owner, or this owner could not renew in time: stop committing. @public */
export class ShardLeaseLostError extends ExactlyError {
  constructor(message: string, options?: ErrorOptions) {
    super("SHARD_LEASE_LOST", message, options);
  }
}

/**
 * The lease of one shard for this process. `acquire` waits while another live owner renews;
 * the owner then calls `renew` on its own timer (`keep` runs that timer) and checks `assertHeld`
 * before every commit.
 * @internal
 */
export class ShardLease {
  readonly durationMs: number;
  readonly renewEveryMs: number;
  readonly pollEveryMs: number;
  readonly owner: string;
  /** New for this lease: it, not the owner name, tells whether the record is this lease's own. */
  readonly nonce: string;
  /** How the record is named in errors. */
  readonly where: string;
  private readonly label: string;
  private readonly count: number | undefined;
  private readonly job: string | undefined;
  private readonly record: ConditionalRecord<LeaseState>;
  private version: string | undefined;
  private held: LeaseState | undefined;
  /** performance.now() when the last successful write began: the owner's lease runs from there. */
  private heldSince = 0;
  private lost: ShardLeaseLostError | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Raised by `stop` and `keep`: a renewal tick of an earlier `keep` ends instead of scheduling the next. */
  private keeping = 0;
  /** The renewal under way, which `release` waits for (its write would otherwise refuse the release's). */
  private renewing: Promise<void> | undefined;

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
    this.nonce = randomBytes(6).toString("hex");
    this.owner = options.owner ?? `${hostname()}:${process.pid}:${this.nonce}`;
    this.count = options.count;
    this.job = options.job;
    this.where = describeRecord(record, options.where ?? "the lease record");
    this.label = options.label ?? "shard lease";
  }

  /** The epoch this process holds the shard at; undefined before `acquire`. */
  get epoch(): number | undefined {
    return this.held?.epoch;
  }

  /**
   * Takes the shard: at once if nobody held it, its owner released it, or its owner's process is
   * certainly gone (lease-holder.ts); otherwise once the record stayed unchanged for `durationMs`
   * (or the holder's own, if longer) by this process's clock. Resolves with the new epoch;
   * rejects when `signal` aborts. `onLive` hears each time the holder is seen alive (the record
   * changed while watched); it may throw to give up (a checkpoint location is refused, not
   * waited for). A holder under this lease's owner name but another nonce that is seen alive is
   * a second process given the same name: refused, naming `lease.owner`.
   */
  async acquire(
    signal?: AbortSignal,
    onWait?: (holder: LeaseState) => void,
    onLive?: (holder: LeaseState) => void,
  ): Promise<number> {
    let watched: { version: string; since: number } | undefined;
    let told = false;
    for (;;) {
      signal?.throwIfAborted();
      const startedAt = performance.now();
      const current = await readLease(this.record, this.where);
      const holder = current?.value;
      const state = holder === undefined ? "gone" : await holderState(holder.process, holder.nonce);
      // Released, last held by this very lease (its renewals failed while the store was down:
      // nobody else can own it under this nonce), or its holder certainly gone: no need to
      // wait it out.
      let take =
        holder === undefined ||
        holder.released ||
        (holder.owner === this.owner && holder.nonce === this.nonce) ||
        state === "gone";
      if (current && holder && !take) {
        // Seen alive: it renewed while watched, or a job of this very thread holds it.
        if (state === "alive" || (watched !== undefined && watched.version !== current.version)) {
          this.refuseNamesake(holder);
          onLive?.(holder);
          watched = undefined;
        }
        if (watched === undefined) watched = { version: current.version, since: startedAt };
        else if (performance.now() - watched.since >= Math.max(this.durationMs, holder.durationMs ?? 0)) take = true;
        if (!take && !told) {
          told = true;
          onWait?.(holder);
        }
      }
      if (take) {
        const at = await thisHolderProcess();
        const next: LeaseState = {
          epoch: holder === undefined ? 1 : nextEpoch(holder.epoch, this.where),
          owner: this.owner,
          nonce: this.nonce,
          released: false,
          durationMs: this.durationMs,
          ...(this.count === undefined ? {} : { count: this.count }),
          ...(this.job === undefined ? {} : { job: this.job }),
          process: at,
        };
        const version = await this.record.replace(current?.version, next);
        if (version !== undefined) {
          this.version = version;
          this.held = next;
          this.heldSince = startedAt;
          this.lost = undefined;
          holdInThisThread(this.nonce, false);
          return next.epoch;
        }
        watched = undefined;
      }
      await sleep(this.pollEveryMs);
    }
  }

  /** A live holder under this lease's owner name is another process given the same `lease.owner`. */
  private refuseNamesake(holder: LeaseState): void {
    if (holder.owner !== this.owner) return;
    throw new ConfigurationError(
      "lease.owner",
      `another process holds ${this.where} under the same owner name ${JSON.stringify(this.owner)} (its nonce ${holder.nonce ?? "none"}, this one's ${this.nonce}) and renews it: ` +
        "two processes were given one owner name; give each its own (the default, host and process id, is), or stop the other one",
    );
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
      this.lost = new ShardLeaseLostError(`${this.label} taken by another owner (this one held epoch ${held.epoch})`);
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
    requireEpoch(epoch, this.where, "the epoch to raise to");
    if (held.epoch >= epoch) return held.epoch;
    const next: LeaseState = { ...held, epoch };
    const startedAt = performance.now();
    const version = await this.record.replace(this.version, next);
    if (version === undefined) {
      this.lost = new ShardLeaseLostError(`${this.label} taken by another owner (this one held epoch ${held.epoch})`);
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
        ? `${this.label} at epoch ${this.held.epoch} not renewed for ${Math.round(performance.now() - this.heldSince)} ms (lease ${this.durationMs} ms)`
        : `${this.label} not acquired`,
    );
  }

  /**
   * Renews every `renewEveryMs` until `release` or `stop`. A renewal that fails with the store
   * unreachable is tried again at the next tick; `onLost` hears once when the lease is lost
   * (taken, or unrenewed for too long).
   */
  keep(onLost: (error: ShardLeaseLostError) => void): void {
    this.stop();
    const run = this.keeping;
    holdInThisThread(this.nonce, true);
    let told = false;
    const tick = async () => {
      this.renewing = this.renew().catch((error: unknown) => {
        if (error instanceof ShardLeaseLostError) this.lost = error;
      });
      await this.renewing;
      // Stopped (or kept anew) while the renewal was under way: schedule nothing more.
      if (run !== this.keeping) return;
      if (!this.isHeld()) {
        holdInThisThread(this.nonce, false);
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

  /** Stops renewing (the lease runs out on its own); a renewal under way still lands. */
  stop(): void {
    this.keeping++;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.held) holdInThisThread(this.nonce, false);
  }

  /** Stops renewing and marks the lease released, so a successor need not wait it out. */
  async release(): Promise<void> {
    this.stop();
    await this.renewing;
    letGoInThisThread(this.nonce);
    const held = this.held;
    if (!held || this.lost) return;
    this.held = undefined;
    await this.record.replace(this.version, { ...held, released: true });
  }

  /**
   * Stops renewing and lets go of the record's client (a Postgres connection keeps a process
   * alive). The lease runs out on its own; a later job of this thread takes it at once.
   */
  async close(): Promise<void> {
    this.stop();
    letGoInThisThread(this.nonce);
    await this.record.close?.();
  }

  private requireHeld(): LeaseState {
    if (!this.held) throw new ShardLeaseLostError(`${this.label} not acquired`);
    if (this.lost) throw this.lost;
    return this.held;
  }
}
