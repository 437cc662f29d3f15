/**
 * Turns of the event loop for code that keeps the CPU busy. While records flow, every await
 * between a source, its operators and its sinks resolves at once, as a microtask, and
 * microtasks run before any I/O: a server's reply (COPY's go-ahead, a write's
 * acknowledgement) sits unread, and the server idle, until the pipeline next waits for that
 * server itself. Code that encodes or decodes many records in a row takes a turn every
 * millisecond, so replies come in and bytes go out meanwhile, and timers (checkpoint
 * triggers) fire on time. A turn costs microseconds.
 */
import { performance } from "node:perf_hooks";
import { setImmediate as nextMacrotask } from "node:timers/promises";

/** How long CPU work runs before the event loop gets a turn. */
const MAX_RUN_WITHOUT_IO_MS = 1;

/** @internal */
export class IoTurns {
  private since = performance.now();

  /** Whether work has run for long enough that the event loop should turn now. */
  get due(): boolean {
    return performance.now() - this.since > MAX_RUN_WITHOUT_IO_MS;
  }

  /** Lets the event loop turn (timers, I/O), then resumes. */
  async take(): Promise<void> {
    await nextMacrotask();
    this.since = performance.now();
  }
}
