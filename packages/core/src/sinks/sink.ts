import type { CheckpointStorage } from "../checkpoint/checkpoint-storage.ts";
import { RecordWriteError } from "../errors.ts";
import type { DeliveryGuarantee, SinkCapabilities } from "../guarantee.ts";
import type { Logger } from "../logger.ts";
import type { Batch, RecordPosition } from "../records.ts";
import type { ShardOwnership } from "../shards/shard-owner.ts";

/** What a sink subtask knows about where it runs and what it restores. @public */
export interface SinkContext {
  /** The sink's unique name in the job; the prefix of everything it creates outside. */
  readonly sinkId: string;
  /**
   * The name the sink had in the checkpoint restored, when it was renamed (`renamedFrom`,
   * docs/design.md I10): its restored work was begun under that name, and so was any
   * lingering work the old name left, which the bases clean up under it too.
   */
  readonly formerSinkId?: string;
  readonly subtask: number;
  readonly parallelism: number;
  /** Parallelism of the run whose state is restored; undefined on a fresh start. */
  readonly previousParallelism: number | undefined;
  /** The checkpoint restored from; undefined on a fresh start. */
  readonly restoredCheckpointId: number | undefined;
  /** The restored states assigned to this subtask (a list: parallelism may have changed). */
  readonly restoredStates: readonly unknown[];
  /**
   * Every restored state of this sink, of all old subtasks. Lingering-work cleanup must
   * spare what any of them references: another subtask is about to commit it.
   */
  readonly allRestoredStates: readonly unknown[];
  readonly storage: CheckpointStorage;
  readonly logger: Logger;
  /**
   * In a sharded job (docs/design.md §2, Shards; I9): the shard this process owns and the
   * epoch it owns it at. A sink fences its writes with it: after a successor took the shard
   * at a higher epoch, nothing written at this one may become visible. Undefined otherwise.
   */
  readonly ownership?: ShardOwnership;
  /**
   * The job's checkpoint and restart timing. A pre-committed transaction waits up to
   * interval + timeout (+ the restart delay after a crash) for its commit, so a sink whose
   * system aborts old transactions checks its timeout against this at open (I7, docs/design.md §3).
   */
  readonly checkpointTiming: {
    readonly intervalMs: number;
    readonly timeoutMs: number;
    /** The longest delay before a restart after a failure. */
    readonly restartDelayMs: number;
    /**
     * In a sharded job: the shard lease's duration. A lost owner's successor takes the shard
     * only after it, so a pre-committed transaction can wait that much longer for its commit.
     */
    readonly takeoverMs?: number;
  };
}

/**
 * The checkpoint hooks every sink implements. The runtime calls them from one subtask;
 * `notifyCheckpointComplete` runs beside `writeBatch`, never queued behind it, because a
 * pre-committed transaction can hold locks the next transaction's writes wait for.
 *
 * Most sinks extend {@link TwoPhaseCommitSink}, {@link GenericWriteAheadSink} or
 * {@link IdempotentSink} instead of implementing this directly.
 * @public
 */
export interface Sink<IN> {
  readonly guarantee: DeliveryGuarantee;
  readonly capabilities: SinkCapabilities;
  open(context: SinkContext): Promise<void>;
  /** Records arrive in batches; a base class turns them into per-record calls. */
  writeBatch(batch: Batch<IN>): void | Promise<void>;
  /** Called on barrier `checkpointId`: flush, pre-commit, and return JSON-serializable state. */
  snapshotState(checkpointId: number): Promise<unknown>;
  /** Checkpoint `checkpointId` is durable: commit everything up to it. Late and repeated calls are normal. */
  notifyCheckpointComplete(checkpointId: number): Promise<void>;
  notifyCheckpointAborted(checkpointId: number): Promise<void>;
  /** Releases resources. Pending (pre-committed) work is left for recovery, never aborted. */
  close(): Promise<void>;
  /**
   * Whether an error of this sink's client may pass if retried (a lost connection, a server
   * restarting). The base classes retry commits with it, and the restart strategy asks it
   * about a failed attempt: a transient failure is restarted however often it repeats.
   */
  isTransient?(error: unknown): boolean;
  /**
   * What the sink holds pre-committed and not yet committed (transactions, logged
   * checkpoints), and when the oldest began, for the pending-transactions metric.
   */
  pendingWork?(): PendingWork;
  /**
   * The event time of the records this subtask was given so far (the minimum over its
   * inputs): called each time it advances, between batches. Most sinks ignore it; a
   * repartition's log writer passes it on to the readers after the log (docs/design.md §2, Groups).
   */
  processWatermark?(watermark: number): void;
}

/** What a sink holds pre-committed and not yet committed, for the pending-transactions metric. @public */
export interface PendingWork {
  readonly count: number;
  /** Epoch ms the oldest pending transaction began; undefined when none is pending. */
  readonly oldestStartedAt: number | undefined;
}

/** Creates one sink instance for each subtask of each run. @public */
export type SinkFactory<IN> = () => Sink<IN>;

/**
 * Calls `write` for each record of a batch, for sinks whose client takes one record at a
 * time. A failure becomes a {@link RecordWriteError} naming the record's source position.
 * Synchronous writes stay synchronous: no promise a record on the hot path.
 * @public
 */
export function writeEachRecord<IN>(
  batch: Batch<IN>,
  write: (record: IN, position: RecordPosition) => void | Promise<void>,
): void | Promise<void> {
  const { values, positions } = batch;
  for (let i = 0; i < values.length; i++) {
    const position = positions[i] as RecordPosition;
    let result: void | Promise<void>;
    try {
      result = write(values[i] as IN, position);
    } catch (error) {
      throw error instanceof RecordWriteError ? error : new RecordWriteError(position, error);
    }
    if (result) return finishAsync(result, batch, i, write);
  }
}

/** The rest of {@link writeEachRecord} once one write turned out asynchronous. */
async function finishAsync<IN>(
  pending: Promise<void>,
  batch: Batch<IN>,
  from: number,
  write: (record: IN, position: RecordPosition) => void | Promise<void>,
): Promise<void> {
  const { values, positions } = batch;
  for (let i = from; i < values.length; i++) {
    const position = positions[i] as RecordPosition;
    try {
      if (i === from) await pending;
      else await write(values[i] as IN, position);
    } catch (error) {
      throw error instanceof RecordWriteError ? error : new RecordWriteError(position, error);
    }
  }
}
