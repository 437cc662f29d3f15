/**
 * One attempt of a job whose subtasks run on worker threads. The main thread keeps what
 * decides: the checkpoint coordinator, the checkpoint storage's metadata and the restart
 * strategy (the runner's). Each worker imports the job module, builds the same graph and
 * runs its share of the subtasks (worker-main.ts); barriers travel in-band between
 * workers, triggers, acknowledgements and notifications as messages with the main thread.
 * Any worker's failure fails the attempt: every worker is cancelled, then terminated.
 */
import { MessageChannel, type MessagePort, Worker } from "node:worker_threads";
import type { CheckpointCoordinator, CoordinatorTargets } from "../../../checkpoint/checkpoint-coordinator.ts";
import type { RestoredCheckpoint } from "../../../checkpoint/checkpoint-storage.ts";
import { CancelledError } from "../../../errors.ts";
import type { FailureKind } from "../../../failures.ts";
import { noMetrics } from "../../../metrics.ts";
import type { JobGraph } from "../../api/job-graph.ts";
import type { JobOrigin } from "../../api/job-origin.ts";
import { createCoordinator, type Execution, type ExecutionOptions, TASK_SETTLE_TIMEOUT_MS } from "../execution.ts";
import { claimLocally, releaseLocally } from "../process-claims.ts";
import { crossingChannels, workersWithSources } from "./placement.ts";
import {
  type FromWorker,
  fromWireError,
  type MetricsCall,
  type ToWorker,
  toWireError,
  WorkerFailure,
  type WorkerSetup,
} from "./worker-protocol.ts";

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

interface WorkerHandle {
  readonly index: number;
  readonly thread: Worker;
  read: number;
  written: number;
  readonly exited: Promise<void>;
  /** Process-wide claims its sinks hold: released when the worker ends, however it ends. */
  readonly claims: Set<string>;
}

/** Resolves when `count` workers have said `type` (or the attempt failed: see `failed`). */
class Rendezvous {
  private readonly waiting = new Map<string, { left: number; resolve: () => void }>();

  wait(key: string, count: number): Promise<void> {
    if (count === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiting.set(key, { left: count, resolve }));
  }

  arrive(key: string): void {
    const entry = this.waiting.get(key);
    if (!entry) return;
    entry.left--;
    if (entry.left === 0) {
      this.waiting.delete(key);
      entry.resolve();
    }
  }
}

export class ThreadedExecution implements Execution, CoordinatorTargets {
  private readonly graph: JobGraph;
  private readonly options: ExecutionOptions;
  private readonly restored: RestoredCheckpoint | undefined;
  private readonly origin: JobOrigin;
  private readonly shape: string;
  private readonly workerCount: number;
  private readonly sourceWorkers: Set<number>;
  private readonly workers: WorkerHandle[] = [];
  private readonly rendezvous = new Rendezvous();
  private coordinator: CheckpointCoordinator | undefined;
  private failure: unknown;
  private rejectFailure: ((error: unknown) => void) | undefined;
  private stopRequested = false;
  private finishingWorkers = 0;
  private nextRequest = 0;
  private readonly settled = new Set<number>();
  private settledAll: (() => void) | undefined;
  /** Set once the attempt ends the workers itself: their exits are expected then. */
  private ending = false;

  constructor(
    graph: JobGraph,
    options: ExecutionOptions,
    restored: RestoredCheckpoint | undefined,
    threads: { origin: JobOrigin; workers: number; shape: string },
  ) {
    this.graph = graph;
    this.options = options;
    this.restored = restored;
    this.origin = threads.origin;
    this.shape = threads.shape;
    this.workerCount = threads.workers;
    this.sourceWorkers = workersWithSources(graph, threads.workers);
  }

  get recordsRead(): number {
    return this.workers.reduce((sum, w) => sum + w.read, 0);
  }

  get recordsWritten(): number {
    return this.workers.reduce((sum, w) => sum + w.written, 0);
  }

  get checkpointsCompleted(): number {
    return this.coordinator?.completed ?? 0;
  }

  /** The sinks and readers live in the workers, which classify their own failures (failureKindOf). */
  transientClassifiers(): Array<(error: unknown) => boolean> {
    return [];
  }

  failureKindOf(error: unknown): FailureKind | undefined {
    return error instanceof WorkerFailure ? error.kind : undefined;
  }

  declineInFlightCheckpoint(reason: string): Promise<void> {
    return this.coordinator?.declineInFlight(reason) ?? Promise.resolve();
  }

  requestStop(): void {
    this.stopRequested = true;
    this.broadcast({ type: "stop" });
  }

  cancel(reason: unknown = new CancelledError()): void {
    this.fail(reason);
  }

  private broadcast(message: ToWorker): void {
    for (const worker of this.workers) worker.thread.postMessage(message);
  }

  private fail(error: unknown): void {
    if (this.failure !== undefined) return;
    this.failure = error;
    this.coordinator?.stop();
    this.broadcast({ type: "cancel", reason: toWireError(error, "other") });
    this.rejectFailure?.(error);
  }

  async run(): Promise<void> {
    const failed = new Promise<never>((_, reject) => {
      this.rejectFailure = reject;
    });
    failed.catch(() => {});
    const workerCount = this.workerCount;
    try {
      this.coordinator = await createCoordinator(this.graph, this.options, this.restored, this, (error) =>
        this.fail(error),
      );
      const opened = this.rendezvous.wait("opened", workerCount);
      this.startWorkers();
      if (this.failure !== undefined) throw this.failure;
      await Promise.race([opened, failed]);
      this.options.listener.onRunning?.();
      const tasksDone = this.rendezvous.wait("tasksDone", workerCount);
      this.broadcast({ type: "run" });
      if (this.stopRequested) this.broadcast({ type: "stop" });
      this.coordinator.start();
      await Promise.race([tasksDone, failed]);
      await Promise.race([this.coordinator.drainNotifications(), failed]);
      const closed = this.rendezvous.wait("closed", workerCount);
      this.broadcast({ type: "close" });
      await Promise.race([closed, failed]);
    } catch (error) {
      this.fail(error);
      await this.settleWorkers();
      throw this.failure;
    } finally {
      this.coordinator?.stop();
      await this.terminateWorkers();
    }
  }

  // ---- the workers ----------------------------------------------------------------------------

  private startWorkers(): void {
    const senders: Array<Record<string, MessagePort>> = [];
    const receivers: Array<Record<string, MessagePort>> = [];
    for (let i = 0; i < this.workerCount; i++) {
      senders.push({});
      receivers.push({});
    }
    for (const { name, sender, receiver } of crossingChannels(this.graph, this.workerCount)) {
      const { port1, port2 } = new MessageChannel();
      (senders[sender] as Record<string, MessagePort>)[name] = port1;
      (receivers[receiver] as Record<string, MessagePort>)[name] = port2;
    }
    for (let index = 0; index < this.workerCount; index++) {
      const own = [
        ...Object.values(senders[index] as Record<string, MessagePort>),
        ...Object.values(receivers[index] as Record<string, MessagePort>),
      ];
      const setup: WorkerSetup = {
        origin: this.origin,
        worker: index,
        workers: this.workerCount,
        shape: this.shape,
        restored: this.restored,
        senders: senders[index] as Record<string, MessagePort>,
        receivers: receivers[index] as Record<string, MessagePort>,
        metrics: this.options.metrics !== noMetrics,
      };
      const thread = new Worker(WORKER_ENTRY, {
        workerData: setup,
        transferList: own,
        resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      });
      const exited = new Promise<void>((resolve) => thread.once("exit", () => resolve()));
      const handle: WorkerHandle = { index, thread, read: 0, written: 0, exited, claims: new Set() };
      this.workers.push(handle);
      thread.on("message", (message: FromWorker) => this.onMessage(handle, message));
      thread.on("error", (error) => this.fail(error));
      thread.on("exit", (code) => {
        this.markSettled(index);
        if (!this.ending && this.failure === undefined && code !== 0)
          this.fail(new Error(`worker ${index} exited with code ${code}`));
      });
    }
  }

  private onMessage(worker: WorkerHandle, message: FromWorker): void {
    switch (message.type) {
      case "opened":
      case "tasksDone":
      case "closed":
        this.rendezvous.arrive(message.type);
        break;
      case "ack":
        this.coordinator?.acknowledge(message.checkpointId, message.taskKey, message.stored);
        break;
      case "decline":
        this.coordinator?.declineState(
          message.checkpointId,
          message.taskKey,
          fromWireError(worker.index, message.error),
        );
        break;
      case "sourcesFinishing":
        this.finishingWorkers++;
        if (this.finishingWorkers === this.sourceWorkers.size) this.finishAfterFinalCheckpoint();
        break;
      case "notified":
        this.rendezvous.arrive(`notified:${message.request}`);
        break;
      case "failed":
        this.fail(fromWireError(worker.index, message.error));
        break;
      case "settled":
        this.markSettled(worker.index);
        break;
      case "log":
        this.options.logger[message.level](`[worker ${worker.index}] ${message.message}`, message.fields);
        break;
      case "claim": {
        const result = claimLocally(message.namespace, message.name, message.holder);
        if (result.granted) worker.claims.add(JSON.stringify([message.namespace, message.name, message.holder.part]));
        worker.thread.postMessage({ type: "claimed", request: message.request, result } satisfies ToWorker);
        break;
      }
      case "release":
        worker.claims.delete(JSON.stringify([message.namespace, message.name, message.part]));
        releaseLocally(message.namespace, message.name, message.part);
        break;
      case "report":
        worker.read = message.read;
        worker.written = message.written;
        for (const call of message.metrics) replay(this.options, call);
        break;
    }
  }

  private markSettled(index: number): void {
    this.settled.add(index);
    if (this.settled.size === this.workers.length) this.settledAll?.();
  }

  /** Waits until every worker has left the calls its tasks were in (see execution.ts : settle). */
  private async settleWorkers(): Promise<void> {
    if (this.settled.size < this.workers.length) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.settledAll = resolve;
        timer = setTimeout(resolve, TASK_SETTLE_TIMEOUT_MS);
      });
      clearTimeout(timer);
    }
  }

  private async terminateWorkers(): Promise<void> {
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

  // ---- the coordinator's targets ----------------------------------------------------------------

  /** Step 1: barrier n enters at every source subtask, in the workers that run them. */
  triggerBarriers(checkpointId: number): void {
    for (const worker of this.workers)
      if (this.sourceWorkers.has(worker.index)) worker.thread.postMessage({ type: "trigger", checkpointId });
  }

  /** Step 5: every worker's sinks commit n; resolves when all have. */
  notifyComplete(checkpointId: number): Promise<void> {
    return this.notify("complete", checkpointId);
  }

  /** Step 6: n was declined. */
  notifyAborted(checkpointId: number): Promise<void> {
    return this.notify("aborted", checkpointId);
  }

  private notify(what: "complete" | "aborted", checkpointId: number): Promise<void> {
    const request = ++this.nextRequest;
    const done = this.rendezvous.wait(`notified:${request}`, this.workers.length);
    this.broadcast({ type: "notify", request, what, checkpointId });
    return done;
  }

  private finishAfterFinalCheckpoint(): void {
    (this.coordinator as CheckpointCoordinator).finish().then(
      () => this.broadcast({ type: "finish" }),
      (error) => this.fail(error),
    );
  }
}

/** A worker's metrics call, made on the job's metrics in the main thread. */
function replay(options: ExecutionOptions, call: MetricsCall): void {
  const metrics = options.metrics;
  switch (call[0]) {
    case "recordsIn":
      metrics.recordsIn(call[1], call[2]);
      break;
    case "recordsOut":
      metrics.recordsOut(call[1], call[2]);
      break;
    case "backpressure":
      metrics.backpressure(call[1], call[2]);
      break;
    case "committed":
      metrics.committed(call[1], call[2]);
      break;
    case "pendingTransactions":
      metrics.pendingTransactions(call[1], call[2], call[3]);
      break;
    case "checkpointEnded":
      metrics.checkpointEnded(call[1], call[2]);
      break;
  }
}
