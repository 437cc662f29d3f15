// Waiting on things that may never answer: every wait here is bounded, and a failure is
// reported with the message of what went wrong last.

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Rejects with "<what> timed out after N s" unless `promise` settles within `ms`. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export interface WaitOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** Returns a reason to give up early (e.g. the server process died), or undefined. */
  giveUpIf?: () => string | undefined;
}

/** Retries `check` until it resolves; on timeout throws with the last failure's message. */
export async function waitFor<T>(what: string, check: () => Promise<T>, options: WaitOptions): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let last = "no attempt finished";
  for (;;) {
    const reason = options.giveUpIf?.();
    if (reason) throw new Error(`${what}: ${reason}`);
    try {
      return await check();
    } catch (error) {
      last = errorMessage(error);
    }
    if (Date.now() > deadline) {
      throw new Error(`${what}: not ready after ${Math.round(options.timeoutMs / 1000)} s (${last})`);
    }
    await sleep(options.intervalMs ?? 500);
  }
}
