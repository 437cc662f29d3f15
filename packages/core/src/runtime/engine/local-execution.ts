import type { CheckpointCoordinator, CoordinatorTargets } from "../../checkpoint/checkpoint-coordinator.ts";
import type { RestoredCheckpoint, StoredTaskState } from "../../checkpoint/checkpoint-storage.ts";
import { CancelledError } from "../../errors.ts";
import type { JobGraph } from "../api/job-graph.ts";
import { createCoordinator, type Execution, type ExecutionOptions, settle } from "./execution.ts";
import { TaskGroup, wholeJob } from "./task-group.ts";
import type { CheckpointAcknowledger } from "./tasks.ts";

/**
 * One attempt of a job with every subtask on this event loop: the task group and the
 * checkpoint coordinator side by side, calling each other directly.
 */
export class LocalExecution implements Execution, CoordinatorTargets, CheckpointAcknowledger {
  private readonly graph: JobGraph;
  private readonly options: ExecutionOptions;
  private readonly restored: RestoredCheckpoint | undefined;
  private group: TaskGroup | undefined;
  private coordinator: CheckpointCoordinator | undefined;
  private failure: unknown;
  private rejectFailure: ((error: unknown) => void) | undefined;
  private taskRuns: Promise<void>[] = [];
  private stopRequested = false;

  constructor(graph: JobGraph, options: ExecutionOptions, restored: RestoredCheckpoint | undefined) {
    this.graph = graph;
    this.options = options;
    this.restored = restored;
  }

  get recordsRead(): number {
    return this.group?.recordsRead ?? 0;
  }

  get recordsWritten(): number {
    return this.group?.recordsWritten ?? 0;
  }

  get checkpointsCompleted(): number {
    return this.coordinator?.completed ?? 0;
  }

  transientClassifiers(): Array<(error: unknown) => boolean> {
    return this.group?.transientClassifiers() ?? [];
  }

  declineInFlightCheckpoint(reason: string): Promise<void> {
    return this.coordinator?.declineInFlight(reason) ?? Promise.resolve();
  }

  requestStop(): void {
    this.stopRequested = true;
    this.group?.requestStop();
  }

  cancel(reason: unknown = new CancelledError()): void {
    this.fail(reason);
  }

  private fail(error: unknown): void {
    if (this.failure !== undefined) return;
    this.failure = error;
    this.coordinator?.stop();
    this.group?.cancel(error);
    this.rejectFailure?.(error);
  }

  async run(): Promise<void> {
    const failed = new Promise<never>((_, reject) => {
      this.rejectFailure = reject;
    });
    failed.catch(() => {});
    try {
      const group = new TaskGroup({
        graph: this.graph,
        options: this.options,
        restored: this.restored,
        share: wholeJob,
        acks: this,
        onSourcesFinishing: () => this.finishAfterFinalCheckpoint(),
      });
      this.group = group;
      this.coordinator = await createCoordinator(this.graph, this.options, this.restored, this, (error) =>
        this.fail(error),
      );
      if (this.failure !== undefined) throw this.failure;
      await Promise.race([group.open(), failed]);
      this.options.listener.onRunning?.();
      if (this.stopRequested) group.requestStop();
      this.coordinator.start();
      this.taskRuns = group.runTasks((error) => this.fail(error));
      await Promise.race([Promise.all(this.taskRuns), failed]);
      await Promise.race([this.coordinator.drainNotifications(), failed]);
      if (this.failure !== undefined) throw this.failure;
      await group.close();
    } catch (error) {
      this.fail(error);
      await settle([...this.taskRuns, ...(this.group?.openCalls() ?? [])], this.options.logger);
      await this.group?.close().catch(() => {});
      throw this.failure;
    } finally {
      this.coordinator?.stop();
    }
  }

  // ---- the coordinator's targets and the tasks' acknowledgements ----------------------------

  /** Step 1: barrier n enters at every source subtask. */
  triggerBarriers(checkpointId: number): void {
    this.group?.triggerBarriers(checkpointId);
  }

  /** Step 3: a task persisted its state for checkpoint n (tasks call this). */
  acknowledge(checkpointId: number, taskKey: string, stored: StoredTaskState): void {
    this.coordinator?.acknowledge(checkpointId, taskKey, stored);
  }

  declineState(checkpointId: number, taskKey: string, error: unknown): void {
    this.coordinator?.declineState(checkpointId, taskKey, error);
  }

  /** Step 5: n is durable; sinks commit. */
  notifyComplete(checkpointId: number): Promise<void> {
    return this.group?.notifyComplete(checkpointId) ?? Promise.resolve();
  }

  /** Step 6: n was declined. */
  notifyAborted(checkpointId: number): Promise<void> {
    return this.group?.notifyAborted(checkpointId) ?? Promise.resolve();
  }

  private finishAfterFinalCheckpoint(): void {
    (this.coordinator as CheckpointCoordinator).finish().then(
      () => this.group?.finishSources(),
      (error) => this.fail(error),
    );
  }
}
