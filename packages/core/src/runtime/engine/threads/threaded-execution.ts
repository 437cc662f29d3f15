/**
 * One attempt of a job whose subtasks run on worker threads. The main thread keeps what
 * decides: the checkpoint coordinator, the checkpoint storage's metadata and the restart
 * strategy (the runner's). Each worker imports the job module, builds the same graph and
 * runs its share of the subtasks (worker-main.ts); barriers travel in-band between
 * workers, triggers, acknowledgements and notifications as messages with the main thread.
 * Any worker's failure fails the attempt: every worker is cancelled, then terminated.
 */
import type { CheckpointCoordinator, CoordinatorTargets } from "../../../checkpoint/checkpoint-coordinator.ts";
import type { RestoredCheckpoint } from "../../../checkpoint/checkpoint-storage.ts";
import { CancelledError } from "../../../errors.ts";
import type { FailureKind } from "../../../failures.ts";
import { noMetrics } from "../../../metrics.ts";
import type { JobGraph } from "../../api/job-graph.ts";
import type { JobOrigin } from "../../api/job-origin.ts";
import { createCoordinator, type Execution, type ExecutionOptions } from "../execution.ts";
import { claimLocally, releaseLocally } from "../process-claims.ts";
import { workersWithSources } from "./placement.ts";
import { type WorkerHandle, WorkerPool } from "./worker-pool.ts";
import {
  type FromWorker,
  fromWireError,
  type MetricsCall,
  type ToWorker,
  toWireError,
  WorkerFailure,
} from "./worker-protocol.ts";

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
  private readonly pool = new WorkerPool();
  private readonly rendezvous = new Rendezvous();
  private coordinator: CheckpointCoordinator | undefined;
  private failure: unknown;
  private rejectFailure: ((error: unknown) => void) | undefined;
  private stopRequested = false;
  private finishingWorkers = 0;
  private nextRequest = 0;

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
    return this.pool.recordsRead;
  }

  get recordsWritten(): number {
    return this.pool.recordsWritten;
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
    this.pool.broadcast(message);
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
      await this.pool.settle();
      throw this.failure;
    } finally {
      this.coordinator?.stop();
      await this.pool.terminate();
    }
  }

  // ---- the workers ----------------------------------------------------------------------------

  private startWorkers(): void {
    this.pool.start(
      this.graph,
      this.workerCount,
      (index, senders, receivers) => ({
        origin: this.origin,
        worker: index,
        workers: this.workerCount,
        shape: this.shape,
        restored: this.restored,
        senders,
        receivers,
        metrics: this.options.metrics !== noMetrics,
        ownership: this.options.ownership,
      }),
      {
        message: (worker, message) => this.onMessage(worker, message),
        error: (error) => this.fail(error),
        exited: (index, code) => {
          if (this.failure === undefined) this.fail(new Error(`worker ${index} exited with code ${code}`));
        },
      },
    );
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
        this.pool.markSettled(worker.index);
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

  // ---- the coordinator's targets ----------------------------------------------------------------

  /** Step 1: barrier n enters at every source subtask, in the workers that run them. */
  triggerBarriers(checkpointId: number): void {
    for (const worker of this.pool.workers)
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
    const done = this.rendezvous.wait(`notified:${request}`, this.pool.workers.length);
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
