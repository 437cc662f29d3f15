import type { CheckpointConfig, CheckpointListener } from "../checkpoint/checkpoint-coordinator.ts";
import type { CheckpointStorage } from "../checkpoint/checkpoint-storage.ts";
import type { CheckpointingMode } from "../checkpoint/checkpointing-mode.ts";
import type { Logger } from "../logger.ts";
import type { JobMetrics } from "../metrics.ts";
import type { FailureKind } from "./restart-strategy.ts";

export interface ExecutionListener extends CheckpointListener {
  /** Every sink has recovered (restored work committed, lingering work aborted); records flow. */
  onRunning?(): void;
}

/** What one attempt of a job runs with, from the job's options. */
export interface ExecutionOptions {
  readonly jobName: string;
  readonly checkpoint: CheckpointConfig;
  readonly checkpointing: CheckpointingMode;
  readonly batchSize: number;
  readonly channelCapacity: number;
  /** The restart strategy's longest delay, for sinks that check transaction timeouts. */
  readonly restartDelayMs: number;
  readonly storage: CheckpointStorage;
  readonly logger: Logger;
  readonly listener: ExecutionListener;
  readonly metrics: JobMetrics;
}

/**
 * One attempt of a job, from restore to finish or failure, on one event loop
 * (runtime/execution.ts) or on worker threads (runtime/threads/threaded-execution.ts). A
 * failure anywhere cancels every task and rejects `run()`; the runner then starts a new
 * attempt from the latest complete checkpoint.
 */
export interface Execution {
  run(): Promise<void>;
  /** Graceful stop: stop reading, take a final checkpoint, commit, finish. */
  requestStop(): void;
  cancel(reason?: unknown): void;
  readonly checkpointsCompleted: number;
  readonly recordsRead: number;
  readonly recordsWritten: number;
  /** The classifiers of this attempt's sinks and source readers, for the restart strategy. */
  transientClassifiers(): Array<(error: unknown) => boolean>;
  /** How a failure was already classified where it happened (another thread), if it was. */
  failureKindOf?(error: unknown): FailureKind | undefined;
  /** Test hook: decline the checkpoint in flight. */
  declineInFlightCheckpoint(reason: string): Promise<void>;
}

/** How long a failed attempt waits for its tasks to leave the call they were in. */
export const TASK_SETTLE_TIMEOUT_MS = 120_000;
