/**
 * Sends that are on the wire and not yet answered, in the order they were sent. A sink hands
 * the server its next calls while the earlier ones are still being applied, so the server
 * never waits for the client between two round trips (with `appendfsync always`, each round
 * trip costs an fsync), and waits only when more than a bounded number are out.
 */
export class InFlight {
  private readonly limit: number;
  private readonly sends: Promise<unknown>[] = [];
  /** The first failure among settled sends, in send order: it is what the caller sees. */
  private failure: { readonly error: unknown } | undefined;

  constructor(limit: number) {
    this.limit = limit;
  }

  /** How many sends are out. */
  get size(): number {
    return this.sends.length;
  }

  /**
   * Adds a send, and waits while more than `limit` are out (the oldest first). Throws the
   * first failure, in send order, once it is known: nothing more should be sent after it.
   */
  async add(send: Promise<unknown>): Promise<void> {
    // Observed at once: a send that fails while an earlier one is awaited is no unhandled rejection.
    send.catch(() => {});
    this.sends.push(send);
    while (this.sends.length > this.limit) await this.settleOldest();
  }

  /** Waits for every send; throws the first failure in send order. */
  async drain(): Promise<void> {
    while (this.sends.length > 0) await this.settleOldest();
  }

  /** Waits for every send and forgets any failure: for a close, which reports nothing. */
  async abandon(): Promise<void> {
    await Promise.allSettled(this.sends.splice(0));
    this.failure = undefined;
  }

  private async settleOldest(): Promise<void> {
    const oldest = this.sends[0] as Promise<unknown>;
    try {
      await oldest;
    } catch (error) {
      this.failure ??= { error };
    } finally {
      this.sends.shift();
    }
    if (this.failure) {
      // The later sends are answered too before the failure is reported: none is left running.
      await Promise.allSettled(this.sends.splice(0));
      const { error } = this.failure;
      this.failure = undefined;
      throw error;
    }
  }
}
