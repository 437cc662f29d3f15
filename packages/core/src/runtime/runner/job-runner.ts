import type { CheckpointStorage, RestoredCheckpoint } from "../../checkpoint/checkpoint-storage.ts";
import { CancelledError, ConfigurationError, describe, JobFailedError } from "../../errors.ts";
import { classifyFailure, type FailureKind } from "../../failures.ts";
import type { Logger } from "../../logger.ts";
import type { JobOwner, ShardOwnership } from "../../shards/job-owner.ts";
import { sleep } from "../../util/sleep.ts";
import type { Execution, ExecutionListener, ExecutionOptions } from "../engine/execution.ts";
import { RestartBackoff, type RestartStrategy } from "./restart-strategy.ts";

/**
 * What a running job reports as it goes: each attempt's start and restart, and each checkpoint's
 * completion, commit and decline.
 * @public
 */
export interface JobEvents extends ExecutionListener {
  onStart?(info: { attempt: number; restoredCheckpointId: number | undefined }): void;
  onRestart?(info: {
    attempt: number;
    error: unknown;
    delayMs: number;
    kind: FailureKind;
    /** Restarts in a row without progress, this one included. */
    failuresInRow: number;
  }): void;
}

/** What a run of a job did: checkpoints completed, restarts, and the checkpoint it restored. @public */
export interface JobResult {
  /** Checkpoints completed in all attempts of this run. */
  readonly checkpointsCompleted: number;
  /** Restarts after failures inside this run. */
  readonly restarts: number;
  /** The checkpoint the first attempt restored, if any. */
  readonly restoredCheckpointId: number | undefined;
}

/** A running job: wait for it, stop it gracefully, or cancel it. @public */
export interface JobClient {
  readonly result: Promise<JobResult>;
  /** Stop reading, take a final checkpoint, commit it, then finish. */
  stop(): Promise<JobResult>;
  cancel(): void;
  /** The execution of the current attempt (for metrics and tests). */
  readonly execution: Execution | undefined;
}

/** How the runner makes each attempt: on one event loop, or on worker threads. */
export interface ExecutionPlan {
  /** The job's key groups; a checkpoint taken with another count cannot be restored. */
  readonly maxParallelism: number;
  /** What of a restored checkpoint this job takes; throws for a checkpoint it must not restore (I10). */
  admit(restored: RestoredCheckpoint): RestoredCheckpoint;
  create(options: ExecutionOptions, restored: RestoredCheckpoint | undefined): Execution;
}

export function startJob(
  plan: ExecutionPlan,
  base: Omit<ExecutionOptions, "listener">,
  restart: RestartStrategy,
  events: JobEvents,
  logger: Logger,
  storage: CheckpointStorage,
  owner?: JobOwner,
): JobClient {
  let current: Execution | undefined;
  let stopRequested = false;
  let cancelled = false;

  const run = async (): Promise<JobResult> => {
    const backoff = new RestartBackoff(restart);
    const resetAfter = restart.resetAfterMs ?? 60_000;
    let restarts = 0;
    let checkpoints = 0;
    let firstRestored: number | undefined;
    for (let attempt = 1; ; attempt++) {
      const startedAt = Date.now();
      let execution: Execution | undefined;
      try {
        // An attempt first owns its shard, or its checkpoint location: it waits while a live owner
        // renews a shard's lease (another job's hold on the location is refused), and a lease
        // lost later fails the attempt it runs.
        let ownership: ShardOwnership | undefined;
        if (owner) ownership = await owner.claim((lost) => current?.cancel(lost), abort.signal);
        // Inside the attempt: checkpoint storage that is unreachable for a while (S3 restarting)
        // fails this attempt and is retried with the others, rather than ending the job.
        const latest = await storage.loadLatest();
        const restored = latest && plan.admit(latest);
        if (restored && restored.metadata.maxParallelism !== plan.maxParallelism) {
          throw new ConfigurationError(
            "maxParallelism",
            `checkpoint ${restored.metadata.checkpointId} was taken with maxParallelism ${restored.metadata.maxParallelism}, the job now has ${plan.maxParallelism}; keyed state cannot be restored`,
          );
        }
        if (attempt === 1) {
          firstRestored = restored?.metadata.checkpointId;
          // Whatever ended the previous process (its own SIGKILL, the host), its next start resumes here.
          if (restored) {
            logger.info(`resuming from checkpoint ${restored.metadata.checkpointId}, the latest complete one`, {
              checkpointId: restored.metadata.checkpointId,
            });
          }
        }
        execution = plan.create({ ...base, listener: events, ...(ownership ? { ownership } : {}) }, restored);
        current = execution;
        if (stopRequested) execution.requestStop();
        events.onStart?.({ attempt, restoredCheckpointId: restored?.metadata.checkpointId });
        await execution.run();
        checkpoints += execution.checkpointsCompleted;
        await owner?.release();
        return { checkpointsCompleted: checkpoints, restarts, restoredCheckpointId: firstRestored };
      } catch (error) {
        const completed = execution?.checkpointsCompleted ?? 0;
        checkpoints += completed;
        if (cancelled || error instanceof ConfigurationError) {
          await owner?.stop();
          throw error;
        }
        if (completed > 0 || Date.now() - startedAt >= resetAfter) backoff.progressed();
        const hints = [
          ...(execution?.transientClassifiers() ?? []),
          ...(storage.isTransient ? [storage.isTransient.bind(storage)] : []),
        ];
        const kind = execution?.failureKindOf?.(error) ?? classifyFailure(error, hints, restart.classify);
        const decision = backoff.onFailure(kind);
        if (!decision.restart) {
          await owner?.stop();
          throw new JobFailedError(attempt, error, decision.reason);
        }
        logger.warn(`job failed (${kind}), restarting from the latest checkpoint in ${decision.delayMs} ms`, {
          attempt,
          kind,
          failuresInRow: decision.failuresInRow,
          failuresLast10Minutes: backoff.failuresLast10Minutes,
          error: describe(error),
        });
        events.onRestart?.({ attempt, error, delayMs: decision.delayMs, kind, failuresInRow: decision.failuresInRow });
        base.metrics.restarted(kind);
        restarts++;
        await sleep(decision.delayMs);
        if (cancelled) throw new CancelledError();
      }
    }
  };

  const abort = new AbortController();
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
      abort.abort(new CancelledError());
      current?.cancel(new CancelledError());
    },
  };
}
