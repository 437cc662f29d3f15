import { performance } from "node:perf_hooks";
import { SinkNotOpenError } from "../errors.ts";

/**
 * How many checkpoint intervals of replay work a write-ahead sink lets build up before it
 * holds its writer back. A commit then waits about this long after its checkpoint completes,
 * whatever the speed of the external system; above one interval, the replay always has a
 * completed log to work on when the next checkpoint completes, so it never idles under load.
 */
const INTERVALS_OF_REPLAY = 2;

/** Weight of the replays before the last one in the replay rate: recent replays count most. */
const EARLIER_REPLAYS_WEIGHT = 0.5;

/**
 * The lag of a write-ahead sink's replay behind its logging, and the hold on its writer that
 * keeps the lag bounded (I6, docs/design.md §4.3). Work is counted in characters of log text.
 *
 * `logged` is what was logged for checkpoints not yet known complete (the open log, and the
 * pending logs of declined checkpoints); `queued` is what completed checkpoints' logs still
 * hold for the replay. The writer waits only while `queued` is above zero and `queued +
 * logged` is above the budget: what holds it back is always work the replay finishes by
 * itself, never a checkpoint that needs this subtask's next snapshot to complete (that would
 * be a deadlock). The budget is what the replay gets through in
 * {@link INTERVALS_OF_REPLAY} checkpoint intervals at the rate it has lately gone, so when
 * the replay is slower than the source the source runs at the replay's pace.
 */
export class ReplayBacklog {
  private readonly intervalSeconds: number;
  private logged = 0;
  private queued = 0;
  /** Log sizes of checkpoints filed and not yet replayed, and whether each is complete. */
  private readonly logs = new Map<number, { readonly chars: number; complete: boolean }>();
  /** The log being replayed: its checkpoint, when the attempt began, and how much it has read. */
  private current: { readonly checkpointId: number; readonly since: number; read: number } | undefined;
  /** Decayed totals over replays done, for the rate. */
  private replayedChars = 0;
  private replayedSeconds = 0;
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

  /** Whether a batch must wait before it is logged. */
  get holds(): boolean {
    if (this.stopped !== undefined) return true;
    const queued = this.queued - (this.current?.read ?? 0);
    return queued > 0 && queued + this.logged > this.budget();
  }

  /** Waits until a batch may be logged; throws once the replay failed or the sink closed. */
  async admit(): Promise<void> {
    while (this.holds) {
      if (this.stopped !== undefined) throw this.stopped;
      await this.change;
    }
  }

  /** Characters of log text the replay gets through in the budget's intervals; infinite before it is known. */
  private budget(): number {
    const current = this.current;
    const chars = this.replayedChars + (current?.read ?? 0);
    const seconds = this.replayedSeconds + (current ? (performance.now() - current.since) / 1000 : 0);
    if (seconds === 0) return Number.POSITIVE_INFINITY;
    return INTERVALS_OF_REPLAY * this.intervalSeconds * (chars / seconds);
  }

  /** The open log grew. */
  logging(chars: number): void {
    this.logged += chars;
  }

  /** The open log was pre-committed under `checkpointId`. */
  filed(checkpointId: number, chars: number): void {
    this.logs.set(checkpointId, { chars, complete: false });
  }

  /** Checkpoint `checkpointId` completed: its log and every earlier one are the replay's to do. */
  completed(checkpointId: number): void {
    for (const [id, log] of this.logs) {
      if (id > checkpointId || log.complete) continue;
      log.complete = true;
      this.logged -= log.chars;
      this.queued += log.chars;
    }
    this.changed();
  }

  /** An attempt to replay `checkpointId`'s log begins (again, after a failed one). */
  replaying(checkpointId: number): void {
    this.current = { checkpointId, since: performance.now(), read: 0 };
  }

  /** The replay read this much of the log it replays. */
  read(chars: number): void {
    const current = this.current;
    const log = current && this.logs.get(current.checkpointId);
    if (!current || !log) return;
    current.read = Math.min(log.chars, current.read + chars);
    this.changed();
  }

  /** `checkpointId`'s log is replayed: its work leaves the queue, and its pace the rate. */
  replayed(checkpointId: number): void {
    const current = this.current;
    this.current = undefined;
    const log = this.logs.get(checkpointId);
    if (!log) return;
    this.logs.delete(checkpointId);
    if (log.complete) this.queued -= log.chars;
    else this.logged -= log.chars;
    if (current?.checkpointId === checkpointId) {
      this.replayedChars = this.replayedChars * EARLIER_REPLAYS_WEIGHT + log.chars;
      this.replayedSeconds = this.replayedSeconds * EARLIER_REPLAYS_WEIGHT + (performance.now() - current.since) / 1000;
    }
    this.changed();
  }

  /** The replay failed, or the sink closed: a waiting writer gets `reason`, as does every later one. */
  stop(reason: unknown = new SinkNotOpenError()): void {
    this.stopped ??= reason;
    this.changed();
  }
}
