import {
  type CheckpointConfig,
  CheckpointCoordinator,
  type CheckpointListener,
  type CoordinatorTargets,
} from "../../checkpoint/checkpoint-coordinator.ts";
import type { CheckpointStorage, RestoredCheckpoint } from "../../checkpoint/checkpoint-storage.ts";
import type { CheckpointingMode } from "../../checkpoint/checkpointing-mode.ts";
import type { FailureKind } from "../../failures.ts";
import type { Logger } from "../../logger.ts";
import type { JobMetrics } from "../../metrics.ts";
import type { ShardOwnership } from "../../shards/shard-owner.ts";
import { globalParallelism } from "../../shards/shard-spec.ts";
import type { JobGraph } from "../api/job-graph.ts";
import { allTaskKeys } from "./restore-assignment.ts";
import type { JobIdentity } from "./restore-identity.ts";

export interface ExecutionListener extends CheckpointListener {
  /** Every sink has recovered (restored work committed, lingering work aborted); records flow. */
  onRunning?(): void;
}

/** What one attempt of a job runs with, from the job's options. */
export interface ExecutionOptions {
  readonly jobName: string;
  /** Who the job is (I10): every checkpoint records it. */
  readonly job: JobIdentity;
  readonly checkpoint: CheckpointConfig;
  readonly checkpointing: CheckpointingMode;
  readonly batchSize: number;
  readonly channelCapacity: number;
  /** The restart strategy's longest delay, for sinks that check transaction timeouts. */
  readonly restartDelayMs: number;
  /** In a sharded job, the lease duration: how long a lost shard waits for its successor. */
  readonly takeoverMs?: number;
  readonly storage: CheckpointStorage;
  readonly logger: Logger;
  readonly listener: ExecutionListener;
  readonly metrics: JobMetrics;
  /** The shard this attempt owns and its epoch, in a sharded job (§2, Shards). */
  readonly ownership?: ShardOwnership;
}

/**
 * One attempt of a job, from restore to finish or failure, on one event loop
 * (local-execution.ts) or on worker threads (threads/threaded-execution.ts). A
 * failure anywhere cancels every task and rejects `run()`; the runner then starts a new
 * attempt from the latest complete checkpoint.
 * @public
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

/** The coordinator of one attempt: its next id is above every id any earlier run reserved. */
export async function createCoordinator(
  graph: JobGraph,
  options: ExecutionOptions,
  restored: RestoredCheckpoint | undefined,
  targets: CoordinatorTargets,
  fail: (error: unknown) => void,
): Promise<CheckpointCoordinator> {
  // Ids are reserved durably, so the next id is above every id any earlier run reserved.
  const lastCheckpointId = Math.max(await options.storage.highestCheckpointId(), restored?.metadata.checkpointId ?? 0);
  return new CheckpointCoordinator({
    config: options.checkpoint,
    storage: options.storage,
    expectedTasks: allTaskKeys(graph),
    lastCheckpointId,
    metadata: {
      jobName: options.jobName,
      job: options.job,
      maxParallelism: graph.maxParallelism,
      stages: Object.fromEntries(
        graph.stages.map((s) => [s.id, { parallelism: globalParallelism(graph.shard, s.parallelism), kind: s.kind }]),
      ),
      ...(graph.shard ? { shard: graph.shard } : {}),
    },
    targets,
    fail,
    listener: options.listener,
    metrics: options.metrics,
    logger: options.logger,
  });
}

/**
 * Waits until `runs` have settled, or `TASK_SETTLE_TIMEOUT_MS`. Without this, a failed
 * attempt's pre-commit or begin could still reach the external system after the next
 * attempt recovered, and fence or abort that attempt's transactions.
 */
export async function settle(runs: readonly Promise<unknown>[], logger: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), TASK_SETTLE_TIMEOUT_MS);
  });
  const settled = await Promise.race([Promise.allSettled(runs).then(() => "settled" as const), bound]);
  clearTimeout(timer);
  if (settled === "timeout") {
    logger.warn(`tasks of the failed attempt still busy after ${TASK_SETTLE_TIMEOUT_MS} ms; restarting anyway`);
  }
}
