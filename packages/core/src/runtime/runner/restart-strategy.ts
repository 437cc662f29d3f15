/**
 * When a failed attempt is restarted, and after how long. A streaming job is expected to ride
 * through an outage of the systems it reads and writes, as a Flink job with its default
 * strategy does, but never to spin on a failure that cannot pass:
 *
 * - a **transient** failure (connection refused or reset, a timeout, a broker or database
 *   that is restarting) is restarted however often it repeats, with exponential backoff and
 *   jitter, up to `maxDelayMs` between attempts;
 * - a **permanent** failure (a setting, a record that cannot be written or processed, a
 *   transaction that is lost, a checkpoint location another process owns) fails the job at
 *   once, with its own error: restarting would fail the same way, or hide data loss;
 * - any other failure is restarted at most `maxRestartsWithoutProgress` times in a row; an
 *   attempt that completed a checkpoint made progress and starts the count again.
 */
import type { FailureKind } from "../../failures.ts";

/** @internal */
export const DEFAULT_MAX_RESTART_DELAY_MS = 10_000;

/** When a failed attempt is restarted, and after how long. @public */
export interface RestartStrategy {
  /**
   * Most restarts in a row, whatever the failure: a cap over the others. Default unlimited.
   * `0` fails the job at its first failure (tests that want that failure).
   */
  readonly maxRestarts?: number;
  /**
   * Most restarts in a row for failures that are neither transient nor permanent, without a
   * checkpoint completed in between. Default 10.
   */
  readonly maxRestartsWithoutProgress?: number;
  /** Delay before the first restart. Default 200 ms. */
  readonly initialDelayMs?: number;
  /** Upper bound of a delay. Default 10 s. */
  readonly maxDelayMs?: number;
  /** Growth of the delay per restart in a row. Default 2. */
  readonly backoffMultiplier?: number;
  /**
   * Each delay is moved by up to this fraction either way, so many jobs that lost one server
   * do not all come back in the same instant. Default 0.1.
   */
  readonly jitter?: number;
  /** An attempt that ran this long counts as progress, as a completed checkpoint does. Default 60 s. */
  readonly resetAfterMs?: number;
  /** The job's own classification, asked before the sinks', sources' and the default one. */
  readonly classify?: (error: unknown) => FailureKind | undefined;
}

/** What to do after a failure: restart after `delayMs`, or fail the job. @internal */
export type RestartDecision =
  | { readonly restart: true; readonly delayMs: number; readonly failuresInRow: number }
  | { readonly restart: false; readonly reason: string };

/** The strategy's state over one job run: failures in a row and the current delay. @internal */
export class RestartBackoff {
  private readonly strategy: RestartStrategy;
  private readonly random: () => number;
  private failuresInRow = 0;
  private otherFailuresInRow = 0;
  private delay: number;
  /** Times of recent failures, for the failure rate in the logs. */
  private readonly recent: number[] = [];

  constructor(strategy: RestartStrategy, random: () => number = Math.random) {
    this.strategy = strategy;
    this.random = random;
    this.delay = strategy.initialDelayMs ?? 200;
  }

  /** An attempt completed a checkpoint, or ran long enough: the counts and the delay start again. */
  progressed(): void {
    this.failuresInRow = 0;
    this.otherFailuresInRow = 0;
    this.delay = this.strategy.initialDelayMs ?? 200;
  }

  /** Failures in the last ten minutes, this one included. */
  get failuresLast10Minutes(): number {
    return this.recent.length;
  }

  onFailure(kind: FailureKind, now = Date.now()): RestartDecision {
    this.recent.push(now);
    while ((this.recent[0] as number) < now - 600_000) this.recent.shift();
    if (kind === "permanent") return { restart: false, reason: "the failure is permanent: a restart would repeat it" };
    this.failuresInRow++;
    if (kind === "other") this.otherFailuresInRow++;
    const cap = this.strategy.maxRestarts ?? Number.POSITIVE_INFINITY;
    if (this.failuresInRow > cap) return { restart: false, reason: `maxRestarts (${cap}) reached` };
    const withoutProgress = this.strategy.maxRestartsWithoutProgress ?? 10;
    if (this.otherFailuresInRow > withoutProgress) {
      return {
        restart: false,
        reason: `${this.otherFailuresInRow} failures in a row without a completed checkpoint (maxRestartsWithoutProgress ${withoutProgress})`,
      };
    }
    const jitter = Math.min(Math.max(this.strategy.jitter ?? 0.1, 0), 1);
    const maxDelay = this.strategy.maxDelayMs ?? DEFAULT_MAX_RESTART_DELAY_MS;
    // Never past maxDelayMs: sinks check their transaction timeout against it (I7).
    const jittered = Math.round(this.delay * (1 + jitter * (2 * this.random() - 1)));
    const delayMs = Math.min(maxDelay, Math.max(0, jittered));
    this.delay = Math.min(this.delay * (this.strategy.backoffMultiplier ?? 2), maxDelay);
    return { restart: true, delayMs, failuresInRow: this.failuresInRow };
  }
}
