import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { SinkNotOpenError } from "../errors.ts";

/**
 * How many checkpoint intervals of sending a write-ahead sink lets its backlog hold before it
 * holds its writer back. A commit then waits about this long after its checkpoint completes,
 * whatever the speed of the external system; above one interval, sending still has a
 * completed log to work on when the next checkpoint completes, so it does not idle under load.
 */
const INTERVALS_OF_SENDING = 1.5;

/** Weight of the sends before the last one in the rate: recent sends count most. */
const EARLIER_SENDS_WEIGHT = 0.5;

/**
 * The pace assumed before anything was sent, in characters of log text a second (about
 * 100,000 rows of 20 characters): low, because too high a guess is paid for by a first
 * commit that takes long, too low a one only by the first interval's records being fewer.
 */
const FIRST_CHARS_PER_SECOND = 2 * 1024 * 1024;

/** A paced writer's pauses are gathered until they are worth a timer. */
const SHORTEST_PAUSE_MS = 4;

/**
 * The lag of a write-ahead sink's sending behind its logging, and the hold on its writer
 * that keeps it bounded (I6, docs/design.md §4.3). Work is counted in characters of log text.
 *
 * `logged` is what was logged for checkpoints not yet known complete (the open log, and the
 * pending logs of declined checkpoints); `queued` is what completed checkpoints' logs still
 * hold for sending. The budget is what sending gets through in {@link INTERVALS_OF_SENDING}
 * checkpoint intervals at the rate it lately went. A batch is logged at once while `queued +
 * logged` is within the budget. Above it, while `queued` holds work, the writer waits for
 * sending to make room: sending finishes that work by itself. When `queued` is empty the
 * writer cannot wait for anything (the open checkpoint completes only after its barrier,
 * which comes behind the batches it writes: a deadlock), so it goes on at sending's pace
 * instead, with pauses that end by themselves: the open checkpoint grows no faster than it
 * can be sent.
 */
export class ReplayBacklog {
  private readonly intervalSeconds: number;
  private logged = 0;
  private queued = 0;
  /** Log sizes of checkpoints filed and not yet sent, and whether each is complete. */
  private readonly logs = new Map<number, { readonly chars: number; complete: boolean }>();
  /** The log being sent: its checkpoint, when the attempt began, and how much it has read. */
  private current: { readonly checkpointId: number; readonly since: number; read: number } | undefined;
  /** Decayed totals over sends done, for the rate. */
  private sentChars = 0;
  private sentSeconds = 0;
  /** Pause a paced writer owes, not yet taken. */
  private pauseMs = 0;
  private stopped: unknown;
  private wake: () => void = () => {};
  private change: Promise<void> = this.nextChange();

  constructor(checkpointIntervalMs: number) {
    this.intervalSeconds = checkpointIntervalMs / 1000;
  }

  private nextChange(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.wake = resolve;
    });
  }

  private changed(): void {
    this.wake();
    this.change = this.nextChange();
  }

  private queuedNow(): number {
    return this.queued - (this.current?.read ?? 0);
  }

  /** Whether the next batch cannot simply be logged: the backlog is over its budget (or stopped). */
  get holds(): boolean {
    return this.stopped !== undefined || this.queuedNow() + this.logged > this.budget();
  }

  /** Whether completed checkpoints wait to be sent beyond the budget: sending is the slower. */
  get lagging(): boolean {
    const queued = this.queuedNow();
    return queued > 0 && queued + this.logged > this.budget();
  }

  /**
   * Returns when a batch of `chars` may be logged: at once, once sending made room, or after
   * the pause that keeps the open checkpoint to sending's pace. Throws once sending failed or
   * the sink closed.
   */
  async admit(chars: number): Promise<void> {
    for (;;) {
      if (this.stopped !== undefined) throw this.stopped;
      if (!this.holds) return;
      if (this.queuedNow() > 0) {
        await this.change;
        continue;
      }
      this.pauseMs += (chars / this.rate()) * 1000;
      if (this.pauseMs >= SHORTEST_PAUSE_MS) {
        // At most an interval at a time: a send that stalled for a moment must not pace the
        // writer long after it went on.
        const pause = Math.min(this.pauseMs, this.intervalSeconds * 1000);
        this.pauseMs = 0;
        await sleep(pause);
      }
      return;
    }
  }

  /**
   * Characters of log text sending gets through a second: as the last sends went (a low guess
   * before any), or less while the send under way goes slower. Only less: a send reads its log
   * ahead of what the external system took, so its progress is no measure of a faster pace.
   */
  private rate(): number {
    const done = this.sentSeconds > 0 ? this.sentChars / this.sentSeconds : FIRST_CHARS_PER_SECOND;
    const current = this.current;
    const chars = this.sentChars + (current?.read ?? 0);
    if (!current || chars === 0) return done;
    return Math.min(done, chars / (this.sentSeconds + (performance.now() - current.since) / 1000));
  }

  private budget(): number {
    return INTERVALS_OF_SENDING * this.intervalSeconds * this.rate();
  }

  /** The open log grew. */
  logging(chars: number): void {
    this.logged += chars;
  }

  /** The open log was pre-committed under `checkpointId`. */
  filed(checkpointId: number, chars: number): void {
    this.logs.set(checkpointId, { chars, complete: false });
  }

  /** Checkpoint `checkpointId` completed: its log and every earlier one are sending's to do. */
  completed(checkpointId: number): void {
    for (const [id, log] of this.logs) {
      if (id > checkpointId || log.complete) continue;
      log.complete = true;
      this.logged -= log.chars;
      this.queued += log.chars;
    }
    this.changed();
  }

  /** An attempt to send `checkpointId`'s log begins (again, after a failed one). */
  replaying(checkpointId: number): void {
    // A log restored at open was not logged here: its size is not known, nor counted.
    if (!this.logs.has(checkpointId)) return;
    this.current = { checkpointId, since: performance.now(), read: 0 };
  }

  /** Sending read this much of the log it sends. */
  read(chars: number): void {
    const current = this.current;
    const log = current && this.logs.get(current.checkpointId);
    if (!current || !log) return;
    current.read = Math.min(log.chars, current.read + chars);
    this.changed();
  }

  /** `checkpointId`'s log is sent: its work leaves the backlog, and its pace goes into the rate. */
  replayed(checkpointId: number): void {
    const current = this.current;
    this.current = undefined;
    const log = this.logs.get(checkpointId);
    if (!log) return;
    this.logs.delete(checkpointId);
    if (log.complete) this.queued -= log.chars;
    else this.logged -= log.chars;
    if (current?.checkpointId === checkpointId) {
      this.sentChars = this.sentChars * EARLIER_SENDS_WEIGHT + log.chars;
      this.sentSeconds = this.sentSeconds * EARLIER_SENDS_WEIGHT + (performance.now() - current.since) / 1000;
    }
    this.changed();
  }

  /** Sending failed, or the sink closed: a waiting writer gets `reason`, as does every later one. */
  stop(reason: unknown = new SinkNotOpenError()): void {
    this.stopped ??= reason;
    this.changed();
  }
}
