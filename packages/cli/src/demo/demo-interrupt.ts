/**
 * SIGINT (Ctrl-C) and SIGTERM during a demo: the demo SIGKILLs its processes, removes the
 * temp output it made (or says where the output is kept), and then ends by the same signal,
 * as a shell or a supervisor expects of a process a signal ended.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { ExactlyError } from "@exactly/core";

/** The demo was stopped by a signal; `message` says what became of its output. */
export class DemoInterruptedError extends ExactlyError {
  readonly signal: NodeJS.Signals;
  constructor(signal: NodeJS.Signals, output: string) {
    super("DEMO_INTERRUPTED", `exactly demo: stopped by ${signal}; ${output}`);
    this.signal = signal;
  }
}

const STOP_SIGNALS = ["SIGINT", "SIGTERM"] as const;

export interface SignalWatch {
  /** Aborted on the first SIGINT or SIGTERM, with the signal's name as its reason. */
  readonly signal: AbortSignal;
  /** Gives the signals back to their default action. */
  dispose(): void;
}

/**
 * Turns SIGINT and SIGTERM into an abort until disposed: the run ends in order instead of at
 * once. A second signal, from a user who will not wait for the cleanup, ends it at once.
 */
export function watchStopSignals(): SignalWatch {
  const controller = new AbortController();
  const dispose = () => {
    for (const name of STOP_SIGNALS) process.off(name, stop);
  };
  function stop(signal: NodeJS.Signals) {
    if (!controller.signal.aborted) return controller.abort(signal);
    dispose();
    process.kill(process.pid, signal);
  }
  for (const name of STOP_SIGNALS) process.on(name, stop);
  return { signal: controller.signal, dispose };
}

/** The signal that stopped the run, if one did. */
export function stopSignalOf(stop: AbortSignal | undefined): NodeJS.Signals | undefined {
  return stop?.aborted ? (stop.reason as NodeJS.Signals) : undefined;
}

/**
 * Waits up to `ms` for a stop signal. Ctrl-C signals the demo's processes with the demo
 * itself, so a process ended by SIGINT may be seen before the demo's own SIGINT arrives; the
 * demo waits for it rather than report a failure.
 */
export async function stopSignalWithin(stop: AbortSignal | undefined, ms: number): Promise<NodeJS.Signals | undefined> {
  if (!stop || stop.aborted) return stopSignalOf(stop);
  // Resolves after `ms`, or rejects at once when `stop` aborts (its timer cleared): either way, ask `stop` then.
  await sleep(ms, undefined, { signal: stop }).catch(() => {});
  return stopSignalOf(stop);
}

/** A stop signal the run is to end by; the caller cleans up before it throws. */
export class StopRequested extends Error {
  readonly signal: NodeJS.Signals;
  constructor(signal: NodeJS.Signals) {
    super(`stopped by ${signal}`);
    this.signal = signal;
  }
}

/** Throws {@link StopRequested} once a stop signal came. */
export function throwIfStopped(stop: AbortSignal | undefined): void {
  const signal = stopSignalOf(stop);
  if (signal) throw new StopRequested(signal);
}
