import { setImmediate as nextMacrotask } from "node:timers/promises";

/**
 * One write-out on its way to the server while the next rows are encoded. `start` waits for
 * the write-out before it, starts the next and returns; `settle` waits for the one in flight.
 * A failed write-out is thrown by the next `start` or `settle`, so at most two write-outs of
 * rows are held, and none is lost silently.
 */
export class WriteOuts {
  private inFlight: Promise<void> | undefined;

  async start(writeOut: () => Promise<void>): Promise<void> {
    await this.settle();
    const sending = writeOut();
    // Thrown by the next start or settle; meanwhile not an unhandled rejection.
    sending.catch(() => {});
    this.inFlight = sending;
    // The caller goes back to encoding rows, as microtasks that keep I/O out; one turn of the
    // event loop first lets the server's go-ahead in (COPY waits for it before any row is
    // sent), so the server works on these rows meanwhile instead of when the next one waits.
    await nextMacrotask();
  }

  async settle(): Promise<void> {
    const sending = this.inFlight;
    this.inFlight = undefined;
    await sending;
  }
}
