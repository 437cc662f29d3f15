import type { FailureKind } from "./failures.ts";

/** Which subtask of which stage a figure belongs to (for a sink, the stage id is the sink's id). @public */
export interface TaskLabels {
  readonly stage: string;
  readonly subtask: number;
}

/** How a checkpoint ended: completed, declined (timeout, a task's decline) or failed (storage). @public */
export type CheckpointResult = "completed" | "declined" | "failed";

/**
 * What the runtime reports while a job runs. Core only calls it; an exporter (the CLI's
 * Prometheus one) keeps the series. Calls come per batch, per checkpoint or per restart,
 * never per record, so an implementation may be plain counters. Figures of one run add up
 * across restarts: a new attempt reports from zero and the exporter keeps adding.
 * @public
 */
export interface JobMetrics {
  /** Records a subtask of an operator or sink stage took in. */
  recordsIn(task: TaskLabels, count: number): void;
  /** Records a subtask of a source or operator stage sent on. */
  recordsOut(task: TaskLabels, count: number): void;
  /** Time a subtask waited for room in a full channel downstream. */
  backpressure(task: TaskLabels, seconds: number): void;
  /** A checkpoint ended; `sizeBytes` is the task state it stored (completed checkpoints only). */
  checkpointEnded(result: CheckpointResult, info: { durationSeconds: number; sizeBytes?: number }): void;
  /** A sink subtask committed a checkpoint, `seconds` after the checkpoint completed. */
  committed(sink: TaskLabels, seconds: number): void;
  /**
   * The transactions (or logged checkpoints) a sink subtask holds pre-committed and not yet
   * committed, and when the oldest of them began (undefined when none).
   */
  pendingTransactions(sink: TaskLabels, count: number, oldestStartedAt: number | undefined): void;
  /** The job failed and restarts from its latest checkpoint. */
  restarted(kind: FailureKind): void;
}

/** Reports nothing: the default. @public */
export const noMetrics: JobMetrics = {
  recordsIn() {},
  recordsOut() {},
  backpressure() {},
  checkpointEnded() {},
  committed() {},
  pendingTransactions() {},
  restarted() {},
};
