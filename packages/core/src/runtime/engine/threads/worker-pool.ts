/**
 * The worker threads of one threaded attempt: started with their share of the thread
 * channels, told things, waited for when a failed attempt settles, and terminated at its
 * end, giving back the process-wide claims each held. What the messages mean is the
 * threaded execution's (threaded-execution.ts); the pool only keeps the threads.
 */
import { MessageChannel, type MessagePort, Worker } from "node:worker_threads";
import type { JobGraph } from "../../api/job-graph.ts";
import { TASK_SETTLE_TIMEOUT_MS } from "../execution.ts";
import { releaseLocally } from "../process-claims.ts";
import { crossingChannels } from "./placement.ts";
import type { FromWorker, ToWorker, WorkerSetup } from "./worker-protocol.ts";

// The entry point next to this file: .ts when run from sources, .js when built.
const WORKER_ENTRY = new URL(
  import.meta.url.endsWith(".ts") ? "./worker-main.ts" : "./worker-main.js",
  import.meta.url,
);

/**
 * Each worker's young generation, in MB. Measured on the demo job (3,000,000 records, P=2 on
 * 2 workers, 2 cores): V8's default gave 2.33–2.38 M records/s at 382–389 MB peak RSS;
 * 32 MB gave 2.50–2.60 M at 219 MB; 64 and 96 MB the same rate at 280 MB. Batches die
 * young, so a small young generation loses nothing and keeps memory down. Measured again at
 * 5,000,000 records once records no longer carried boxed doubles: 48 MB ran in 2.19–2.26 s
 * against 2.33–2.50 s at 32 MB, at the same peak RSS (212–215 MB); 64 MB, 272–279 MB.
 * Once the file sink's lines no longer survived collections, 96 MB ran within the machine's
 * spread of 48 MB (2.49–2.99 against 2.47–2.84 M records/s) at 277–284 MB against 213.
 */
const WORKER_YOUNG_GENERATION_MB = 48;

export interface WorkerHandle {
  readonly index: number;
  readonly thread: Worker;
  read: number;
  written: number;
  readonly exited: Promise<void>;
  /** Process-wide claims its sinks hold: released when the worker ends, however it ends. */
  readonly claims: Set<string>;
}

/** What the pool tells its execution about the threads. */
export interface WorkerPoolEvents {
  message(worker: WorkerHandle, message: FromWorker): void;
  error(error: unknown): void;
  /** A worker ended with a non-zero code while the pool was not ending it. */
  exited(index: number, code: number): void;
}

export class WorkerPool {
  readonly workers: WorkerHandle[] = [];
  private readonly settled = new Set<number>();
  private settledAll: (() => void) | undefined;
  /** Set once the pool ends the workers itself: their exits are expected then. */
  private ending = false;

  get recordsRead(): number {
    return this.workers.reduce((sum, w) => sum + w.read, 0);
  }

  get recordsWritten(): number {
    return this.workers.reduce((sum, w) => sum + w.written, 0);
  }

  /**
   * Starts `count` workers, each with the thread channels of the edges that cross to or from
   * it (made here, transferred to it) and the setup `setupOf` gives it.
   */
  start(
    graph: JobGraph,
    count: number,
    setupOf: (
      index: number,
      senders: Record<string, MessagePort>,
      receivers: Record<string, MessagePort>,
    ) => WorkerSetup,
    events: WorkerPoolEvents,
  ): void {
    const senders: Array<Record<string, MessagePort>> = [];
    const receivers: Array<Record<string, MessagePort>> = [];
    for (let i = 0; i < count; i++) {
      senders.push({});
      receivers.push({});
    }
    for (const { name, sender, receiver } of crossingChannels(graph, count)) {
      const { port1, port2 } = new MessageChannel();
      (senders[sender] as Record<string, MessagePort>)[name] = port1;
      (receivers[receiver] as Record<string, MessagePort>)[name] = port2;
    }
    for (let index = 0; index < count; index++) {
      const ownSenders = senders[index] as Record<string, MessagePort>;
      const ownReceivers = receivers[index] as Record<string, MessagePort>;
      const thread = new Worker(WORKER_ENTRY, {
        workerData: setupOf(index, ownSenders, ownReceivers),
        transferList: [...Object.values(ownSenders), ...Object.values(ownReceivers)],
        resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      });
      const exited = new Promise<void>((resolve) => thread.once("exit", () => resolve()));
      const handle: WorkerHandle = { index, thread, read: 0, written: 0, exited, claims: new Set() };
      this.workers.push(handle);
      thread.on("message", (message: FromWorker) => events.message(handle, message));
      thread.on("error", (error) => events.error(error));
      thread.on("exit", (code) => {
        this.markSettled(index);
        if (!this.ending && code !== 0) events.exited(index, code);
      });
    }
  }

  broadcast(message: ToWorker): void {
    for (const worker of this.workers) worker.thread.postMessage(message);
  }

  /** A worker left the calls its tasks were in (it said so, or it exited). */
  markSettled(index: number): void {
    this.settled.add(index);
    if (this.settled.size === this.workers.length) this.settledAll?.();
  }

  /** Waits until every worker has left the calls its tasks were in (see execution.ts : settle). */
  async settle(): Promise<void> {
    if (this.settled.size < this.workers.length) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.settledAll = resolve;
        timer = setTimeout(resolve, TASK_SETTLE_TIMEOUT_MS);
      });
      clearTimeout(timer);
    }
  }

  async terminate(): Promise<void> {
    this.ending = true;
    await Promise.all(
      this.workers.map(async (worker) => {
        await worker.thread.terminate();
        await worker.exited;
        // A worker ended without closing its sinks (terminated, or crashed) must not keep
        // its claims from the next attempt.
        for (const claim of worker.claims) {
          const [namespace, name, part] = JSON.parse(claim) as [string, string, number];
          releaseLocally(namespace, name, part);
        }
        worker.claims.clear();
      }),
    );
  }
}
