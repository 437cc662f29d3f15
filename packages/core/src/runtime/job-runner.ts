import type { CheckpointStorage } from "../checkpoint/checkpoint-storage.ts";
import { CancelledError, ConfigurationError, JobFailedError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { sleep } from "../sinks/retry.ts";
import { type ExecutionListener, type ExecutionOptions, JobExecution } from "./execution.ts";
import type { JobGraph } from "./job-graph.ts";

export const DEFAULT_MAX_RESTART_DELAY_MS = 10_000;

/** Exponential backoff between restarts after a failure. */
export interface RestartStrategy {
  /** Restarts allowed before the job fails for good. Default 10. */
  readonly maxRestarts?: number;
  /** Delay before the first restart. Default 200 ms. */
  readonly initialDelayMs?: number;
  /** Upper bound of a delay. Default 10 s. */
  readonly maxDelayMs?: number;
  /** An attempt that ran this long without failing resets the count and the delay. Default 60 s. */
  readonly resetAfterMs?: number;
}

export interface JobEvents extends ExecutionListener {
  onStart?(info: { attempt: number; restoredCheckpointId: number | undefined }): void;
  onRestart?(info: { attempt: number; error: unknown; delayMs: number }): void;
}

export interface JobResult {
  /** Checkpoints completed in all attempts of this run. */
  readonly checkpointsCompleted: number;
  /** Restarts after failures inside this run. */
  readonly restarts: number;
  /** The checkpoint the first attempt restored, if any. */
  readonly restoredCheckpointId: number | undefined;
}

/** A running job: wait for it, stop it gracefully, or cancel it. */
export interface JobClient {
  readonly result: Promise<JobResult>;
  /** Stop reading, take a final checkpoint, commit it, then finish. */
  stop(): Promise<JobResult>;
  cancel(): void;
  /** The execution of the current attempt (for metrics and tests). */
  readonly execution: JobExecution | undefined;
}

export function startJob(
  graph: JobGraph,
  base: Omit<ExecutionOptions, "listener">,
  restart: RestartStrategy,
  events: JobEvents,
  logger: Logger,
  storage: CheckpointStorage,
): JobClient {
  let current: JobExecution | undefined;
  let stopRequested = false;
  let cancelled = false;

  const run = async (): Promise<JobResult> => {
    const maxRestarts = restart.maxRestarts ?? 10;
    const initialDelay = restart.initialDelayMs ?? 200;
    const maxDelay = restart.maxDelayMs ?? DEFAULT_MAX_RESTART_DELAY_MS;
    const resetAfter = restart.resetAfterMs ?? 60_000;
    let restarts = 0;
    let failuresInRow = 0;
    let delay = initialDelay;
    let checkpoints = 0;
    let firstRestored: number | undefined;
    for (let attempt = 1; ; attempt++) {
      const startedAt = Date.now();
      let execution: JobExecution | undefined;
      try {
        // Inside the attempt: checkpoint storage that is unreachable for a while (S3 restarting)
        // fails this attempt and is retried with the others, rather than ending the job.
        const restored = await storage.loadLatest();
        if (restored && restored.metadata.maxParallelism !== graph.maxParallelism) {
          throw new ConfigurationError(
            "maxParallelism",
            `checkpoint ${restored.metadata.checkpointId} was taken with maxParallelism ${restored.metadata.maxParallelism}, the job now has ${graph.maxParallelism}; keyed state cannot be restored`,
          );
        }
        if (attempt === 1) firstRestored = restored?.metadata.checkpointId;
        execution = new JobExecution(graph, { ...base, listener: events }, restored);
        current = execution;
        if (stopRequested) execution.requestStop();
        events.onStart?.({ attempt, restoredCheckpointId: restored?.metadata.checkpointId });
        await execution.run();
        checkpoints += execution.checkpointsCompleted;
        return { checkpointsCompleted: checkpoints, restarts, restoredCheckpointId: firstRestored };
      } catch (error) {
        checkpoints += execution?.checkpointsCompleted ?? 0;
        if (cancelled || error instanceof ConfigurationError) throw error;
        if (Date.now() - startedAt >= resetAfter) {
          failuresInRow = 0;
          delay = initialDelay;
        }
        failuresInRow++;
        if (failuresInRow > maxRestarts) throw new JobFailedError(attempt, error);
        logger.warn(`job failed, restarting from the latest checkpoint in ${delay} ms`, {
          attempt,
          error: error instanceof Error ? error.message : String(error),
        });
        events.onRestart?.({ attempt, error, delayMs: delay });
        restarts++;
        await sleep(delay);
        delay = Math.min(delay * 2, maxDelay);
        if (cancelled) throw new CancelledError();
      }
    }
  };

  const result = run();
  return {
    result,
    get execution() {
      return current;
    },
    stop() {
      stopRequested = true;
      current?.requestStop();
      return result;
    },
    cancel() {
      cancelled = true;
      current?.cancel(new CancelledError());
    },
  };
}
