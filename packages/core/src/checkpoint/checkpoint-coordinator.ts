import { describe } from "../errors.ts";
import { classifyFailure, isLostShard } from "../failures.ts";
import { reachFault } from "../faults/fault-points.ts";
import type { Logger } from "../logger.ts";
import type { JobMetrics } from "../metrics.ts";
import type { CheckpointMetadata, CheckpointStorage, StoredTaskState } from "./checkpoint-storage.ts";

/**
 * The checkpoint lifecycle, step by step (docs/design.md §2). Each step names where it
 * happens and the fault point (`EXACTLY_FAULT=<point>@<n>`) the crash tests kill it at.
 *
 * | step                                   | file : function                                             | fault point                |
 * | -------------------------------------- | ----------------------------------------------------------- | -------------------------- |
 * | 0 reserve id n durably                 | checkpoint-coordinator.ts : triggerCheckpoint               | —                          |
 * | 1 barrier n at every source            | runtime/engine/task-group.ts : triggerBarriers → tasks.ts : SourceTask.emitBarrier | —          |
 * | 2 align barriers, snapshot operators   | runtime/engine/tasks.ts : InputTask.onBarrier, OperatorTask.onCheckpoint | —                    |
 * | 3 sink pre-commits, begins the next    | runtime/engine/tasks.ts : SinkTask.onCheckpoint → sinks/*-sink.ts : snapshotState | after-pre-commit, after-begin |
 * | 3 task state persisted, acknowledged   | runtime/engine/tasks.ts : persistAndAck → checkpoint-coordinator.ts : acknowledge | —           |
 * | 4 metadata durable: n is complete      | checkpoint-coordinator.ts : completeCheckpoint              | after-checkpoint-durable   |
 * | 5 sinks commit every pending id ≤ n    | runtime/engine/task-group.ts : notifyComplete → sinks/*-sink.ts : notifyCheckpointComplete | mid-commit |
 * | 6 declined n: pending stays pending    | checkpoint-coordinator.ts : declineCheckpoint → sinks/*-sink.ts : notifyCheckpointAborted | — |
 * | 6 storage failed (full, read-only): n declined, the job goes on | checkpoint-coordinator.ts : storageFailed | — |
 * | R recovery: recommit, abort, lingering | runtime/engine/task-group.ts : open → sinks/*-sink.ts : open       | during-recovery-commit, during-lingering-abort |
 *
 * Records written between barriers reach the sink through `writeBatch` (fault point `mid-write`).
 * On worker threads (runtime/engine/threads/), steps 1, 5 and 6 reach each worker's task group as
 * messages and step 3's acknowledgements come back as messages; the rest is unchanged.
 * @internal
 */
export interface CheckpointConfig {
  /** Time between the start of two checkpoints. */
  readonly intervalMs: number;
  /** A checkpoint not acknowledged by every task within this is declined. */
  readonly timeoutMs: number;
  /** Least time between the end of one checkpoint and the start of the next. */
  readonly minPauseMs: number;
}

/**
 * Called as checkpoints complete, are committed by every sink, or are declined ({@link JobEvents}
 * has these too).
 * @public
 */
export interface CheckpointListener {
  onComplete?(checkpointId: number, info: { durationMs: number; final: boolean }): void;
  /** Every sink has committed checkpoint `checkpointId`; `durationMs` counts from its completion. */
  onCommitted?(checkpointId: number, info: { durationMs: number }): void;
  onDeclined?(checkpointId: number, reason: string): void;
}

export interface CoordinatorTargets {
  /** Injects barrier `checkpointId` at every source subtask. */
  triggerBarriers(checkpointId: number): void;
  /** Tells every task checkpoint `checkpointId` is complete; resolves when they have acted (committed). */
  notifyComplete(checkpointId: number): Promise<void>;
  notifyAborted(checkpointId: number): Promise<void>;
}

interface InFlight {
  readonly checkpointId: number;
  readonly startedAt: number;
  readonly handles: Map<string, string>;
  /** Bytes of the task states acknowledged so far. */
  bytes: number;
  readonly final: boolean;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Triggers checkpoints (at most one in flight, with interval, minimum pause and timeout),
 * collects acknowledgements, makes the checkpoint durable, and only then notifies
 * completion — the single place where "complete" is decided (docs/design.md §2, steps 4–6).
 */
export class CheckpointCoordinator {
  private readonly config: CheckpointConfig;
  private readonly storage: CheckpointStorage;
  private readonly targets: CoordinatorTargets;
  private readonly expectedTasks: ReadonlySet<string>;
  private readonly metadataBase: Omit<CheckpointMetadata, "checkpointId" | "timestamp" | "taskStates" | "final">;
  private readonly fail: (error: unknown) => void;
  private readonly listener: CheckpointListener;
  private readonly metrics: JobMetrics;
  private readonly logger: Logger;
  private lastCheckpointId: number;
  private inFlight: InFlight | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastTriggerAt = 0;
  private stopped = false;
  /** A trigger is between reserving its id and sending barriers; no second one may start. */
  private triggering = false;
  private finishing = false;
  private finalDone: (() => void) | undefined;
  private readonly notifications = new Set<Promise<void>>();
  completed = 0;
  /** Checkpoints declined in a row because the storage failed. */
  private storageFailures = 0;

  constructor(init: {
    config: CheckpointConfig;
    storage: CheckpointStorage;
    targets: CoordinatorTargets;
    expectedTasks: ReadonlySet<string>;
    metadata: Omit<CheckpointMetadata, "checkpointId" | "timestamp" | "taskStates" | "final">;
    lastCheckpointId: number;
    fail: (error: unknown) => void;
    listener: CheckpointListener;
    metrics: JobMetrics;
    logger: Logger;
  }) {
    this.config = init.config;
    this.storage = init.storage;
    this.targets = init.targets;
    this.expectedTasks = init.expectedTasks;
    this.metadataBase = init.metadata;
    this.lastCheckpointId = init.lastCheckpointId;
    this.fail = init.fail;
    this.listener = init.listener;
    this.metrics = init.metrics;
    this.logger = init.logger;
  }

  start(): void {
    this.schedule(this.config.intervalMs);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.inFlight) clearTimeout(this.inFlight.timer);
  }

  /**
   * Every source has stopped reading: take a final checkpoint (again, if one is declined)
   * and resolve once it is complete and its commits are done.
   */
  finish(): Promise<void> {
    this.finishing = true;
    const done = new Promise<void>((resolve) => {
      this.finalDone = resolve;
    });
    if (!this.inFlight && !this.triggering) this.schedule(0);
    return done;
  }

  /** Resolves when every completion notification sent so far has been acted on. */
  async drainNotifications(): Promise<void> {
    while (this.notifications.size > 0) await Promise.all([...this.notifications]);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(
      () => {
        this.triggerCheckpoint().catch((error) => this.fail(error));
      },
      Math.max(0, delayMs),
    );
  }

  private async triggerCheckpoint(): Promise<void> {
    if (this.stopped || this.inFlight || this.triggering) return;
    const checkpointId = ++this.lastCheckpointId;
    const final = this.finishing;
    this.lastTriggerAt = Date.now();
    this.triggering = true;
    try {
      // The id is reserved durably before any barrier carries it, so no restart reuses it.
      await this.storage.beginCheckpoint(checkpointId);
    } catch (error) {
      // Not reserved: no barrier carries it, nothing outside is named by it.
      this.storageFailed(checkpointId, "could not be reserved", error);
      return;
    } finally {
      this.triggering = false;
    }
    if (this.stopped) return;
    const inFlight: InFlight = {
      checkpointId,
      startedAt: Date.now(),
      handles: new Map(),
      bytes: 0,
      final,
      timer: undefined,
    };
    inFlight.timer = setTimeout(() => {
      this.declineCheckpoint(inFlight, `not acknowledged within ${this.config.timeoutMs} ms`).catch((e) =>
        this.fail(e),
      );
    }, this.config.timeoutMs);
    this.inFlight = inFlight;
    this.targets.triggerBarriers(checkpointId);
  }

  acknowledge(checkpointId: number, taskKey: string, stored: StoredTaskState): void {
    const inFlight = this.inFlight;
    // Late acknowledgements of a declined checkpoint are normal; drop them.
    if (!inFlight || inFlight.checkpointId !== checkpointId) return;
    inFlight.handles.set(taskKey, stored.handle);
    inFlight.bytes += stored.bytes;
    if (inFlight.handles.size < this.expectedTasks.size) return;
    clearTimeout(inFlight.timer);
    this.completeCheckpoint(inFlight).catch((error) => this.fail(error));
  }

  /** A task could not store its state for `checkpointId`: the checkpoint is declined, the task goes on. */
  declineState(checkpointId: number, taskKey: string, error: unknown): void {
    const inFlight = this.inFlight;
    if (!inFlight || inFlight.checkpointId !== checkpointId) return;
    clearTimeout(inFlight.timer);
    this.inFlight = undefined;
    this.storageFailed(checkpointId, `task ${taskKey} could not store its state`, error, inFlight);
  }

  /**
   * The checkpoint storage failed (full, read-only, unreachable) while taking checkpoint n:
   * n is declined rather than the job failed, as Flink tolerates checkpoint failures. Sinks
   * keep what they pre-committed pending (step 6), so nothing is committed that recovery
   * could not commit again, and the next checkpoint that completes commits it all. The next
   * attempt comes a full interval later. A failure that no retry passes (another process
   * owns the location) still fails the job.
   */
  private storageFailed(checkpointId: number, what: string, error: unknown, inFlight?: InFlight): void {
    // A storage another process owns, or a shard another owner took: no later checkpoint of
    // this attempt can complete, so it fails rather than declining one checkpoint after another.
    if (classifyFailure(error, []) === "permanent" || isLostShard(error)) {
      this.fail(error);
      return;
    }
    const reason = `checkpoint storage failed: ${what}: ${describe(error)}`;
    this.storageFailures++;
    this.logger.warn(`checkpoint ${checkpointId} declined: ${reason}`, {
      storageFailuresInRow: this.storageFailures,
    });
    this.listener.onDeclined?.(checkpointId, reason);
    this.metrics.checkpointEnded("failed", {
      durationSeconds: secondsSince(inFlight?.startedAt ?? this.lastTriggerAt),
    });
    const aborted = inFlight ? this.targets.notifyAborted(checkpointId) : Promise.resolve();
    aborted.then(
      () => this.schedule(Math.max(this.config.intervalMs, this.config.minPauseMs)),
      (e: unknown) => this.fail(e),
    );
  }

  private async completeCheckpoint(inFlight: InFlight): Promise<void> {
    const metadata: CheckpointMetadata = {
      ...this.metadataBase,
      checkpointId: inFlight.checkpointId,
      timestamp: Date.now(),
      taskStates: Object.fromEntries(inFlight.handles),
      ...(inFlight.final ? { final: true } : {}),
    };
    try {
      await this.storage.completeCheckpoint(metadata);
    } catch (error) {
      // Not known complete: declined, and its state is kept — the metadata may have become
      // visible before the failure, and then recovery needs that state (retention removes it).
      this.inFlight = undefined;
      this.storageFailed(inFlight.checkpointId, "its metadata could not be written", error, inFlight);
      return;
    }
    this.storageFailures = 0;
    reachFault("after-checkpoint-durable");
    this.metrics.checkpointEnded("completed", {
      durationSeconds: secondsSince(inFlight.startedAt),
      sizeBytes: inFlight.bytes,
    });
    // Durable now: from here on, recovery commits this checkpoint even if we crash.
    this.inFlight = undefined;
    this.completed++;
    // A stopped (failed) attempt tells no sink to commit: recovery commits this checkpoint.
    if (this.stopped) return;
    this.listener.onComplete?.(inFlight.checkpointId, {
      durationMs: Date.now() - inFlight.startedAt,
      final: inFlight.final,
    });
    const notification = this.notifyComplete(inFlight.checkpointId);
    if (inFlight.final) {
      await notification;
      await this.recordFinalCommitted(inFlight.checkpointId);
      this.stop();
      this.finalDone?.();
      return;
    }
    this.scheduleNext();
  }

  /**
   * The final checkpoint's commits are done: recorded in the storage for tools to read. Only
   * informative (recovery commits a restored checkpoint either way), so a failure is a warning.
   */
  private async recordFinalCommitted(checkpointId: number): Promise<void> {
    try {
      await this.storage.markCommitted?.(checkpointId);
    } catch (error) {
      this.logger.warn(`checkpoint ${checkpointId}: could not record that it was committed`, {
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  /** Step 5: tells every task n is complete; reports when all sinks have committed it. */
  private notifyComplete(checkpointId: number): Promise<void> {
    const completedAt = Date.now();
    const notification = this.targets.notifyComplete(checkpointId);
    this.notifications.add(notification);
    notification.then(
      () => {
        this.notifications.delete(notification);
        this.listener.onCommitted?.(checkpointId, { durationMs: Date.now() - completedAt });
      },
      (error) => {
        this.notifications.delete(notification);
        this.fail(error);
      },
    );
    return notification;
  }

  private async declineCheckpoint(inFlight: InFlight, reason: string): Promise<void> {
    if (this.inFlight !== inFlight) return;
    this.inFlight = undefined;
    this.logger.warn(`checkpoint ${inFlight.checkpointId} declined: ${reason}`);
    this.listener.onDeclined?.(inFlight.checkpointId, reason);
    this.metrics.checkpointEnded("declined", { durationSeconds: secondsSince(inFlight.startedAt) });
    // Dropping the state is housekeeping: a storage that cannot do it now must not fail the job.
    await this.storage.discardCheckpoint(inFlight.checkpointId).catch((error: unknown) => {
      this.logger.warn(`state of declined checkpoint ${inFlight.checkpointId} not removed: ${describe(error)}`);
    });
    await this.targets.notifyAborted(inFlight.checkpointId);
    this.scheduleNext();
  }

  private scheduleNext(): void {
    if (this.finishing) {
      this.schedule(this.config.minPauseMs);
      return;
    }
    const sinceTrigger = Date.now() - this.lastTriggerAt;
    this.schedule(Math.max(this.config.intervalMs - sinceTrigger, this.config.minPauseMs));
  }

  /** For tests: decline the checkpoint in flight now, as a timeout would. */
  declineInFlight(reason: string): Promise<void> {
    return this.inFlight ? this.declineCheckpoint(this.inFlight, reason) : Promise.resolve();
  }

  get inFlightCheckpointId(): number | undefined {
    return this.inFlight?.checkpointId;
  }
}

function secondsSince(startedAt: number): number {
  return (Date.now() - startedAt) / 1000;
}
