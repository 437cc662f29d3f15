import { isLostShard } from "../failures.ts";
import { sleep } from "../util/sleep.ts";

/** The exponential backoff of a retried call (a sink's commits on transient errors). @public */
export interface RetryOptions {
  /** Attempts in all, the first included. Default 5. */
  readonly maxAttempts?: number;
  /** Delay before the second attempt, doubled each time. Default 100 ms. */
  readonly initialDelayMs?: number;
  /** Upper bound of one delay. Default 5000 ms. */
  readonly maxDelayMs?: number;
}

/**
 * Runs `action` until it succeeds, retrying transient errors with exponential backoff. A lost
 * shard (`ShardFencedError`, `ShardLeaseLostError`) is transient for the attempt but never
 * passes on a retry of the same write: it is thrown at once.
 * @internal
 */
export async function withRetry<T>(
  action: (attempt: number) => Promise<T>,
  isTransient: (error: unknown) => boolean,
  options: RetryOptions = {},
): Promise<T> {
  const maxAttempts = options.maxAttempts ?? 5;
  let delay = options.initialDelayMs ?? 100;
  const maxDelay = options.maxDelayMs ?? 5000;
  for (let attempt = 1; ; attempt++) {
    try {
      return await action(attempt);
    } catch (error) {
      if (attempt >= maxAttempts || isLostShard(error) || !isTransient(error)) throw error;
      await sleep(delay);
      delay = Math.min(delay * 2, maxDelay);
    }
  }
}
