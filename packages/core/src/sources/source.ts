import { keyGroupOf, subtaskForKeyGroup } from "../operators/key-groups.ts";
import type { Batch } from "../records.ts";

/**
 * A source is cut into splits that do not depend on parallelism (generator lanes, files,
 * Kafka partitions); a reader owns some splits. Its checkpointed state is the position of
 * each split, so after a change of parallelism the splits are dealt out again and each
 * resumes where it stopped.
 * @public
 */
export interface Source<T> {
  /** Names the source in record positions and errors. */
  readonly name: string;
  /** A bounded source ends; the job then takes a final checkpoint and finishes. */
  readonly bounded: boolean;
  createReader(context: SourceReaderContext): SourceReader<T>;
}

/**
 * What a source subtask's reader is created with: its subtask, the stage's parallelism, and the
 * positions a restore hands it.
 * @public
 */
export interface SourceReaderContext {
  readonly subtask: number;
  readonly parallelism: number;
  /** Split id → position, for every split of the source in the restored checkpoint. */
  readonly restoredPositions: ReadonlyMap<string, unknown> | undefined;
}

/** Reads the splits one source subtask owns, and says how far it read each one for a checkpoint. @public */
export interface SourceReader<T> {
  open?(): Promise<void>;
  /**
   * The next records, at most `maxRecords`. Returns `null` once every split of this reader
   * is exhausted, and an empty batch when nothing arrived within a short wait, so the
   * runtime can inject barriers into an idle stream.
   */
  poll(maxRecords: number): Batch<T> | null | Promise<Batch<T> | null>;
  /**
   * Split id → position after the last record returned by `poll`, for checkpoint
   * `checkpointId`. JSON-serializable.
   */
  snapshotPositions(checkpointId: number): Record<string, unknown>;
  /**
   * The ids of the splits this reader still reads (exhausted ones left out). With it, event
   * time is tracked per split and the reader's watermark is the minimum over these splits,
   * as in Flink's per-split watermarks: a split that lags (a Kafka partition behind the
   * others, a generator lane not yet polled) holds the watermark back rather than having its
   * records dropped as late. Without it, the reader is treated as a single split.
   */
  activeSplits?(): readonly string[];
  /**
   * The reader's own event time, for a reader that knows it from its input rather than from
   * its records' timestamps (a repartition's log reader: its writers' watermarks). Asked after
   * every poll; the subtask emits it when it advances. Its batches carry their timestamps.
   * A source stage with a watermark strategy does not ask it.
   */
  watermark?(): number | undefined;
  /** Checkpoint `checkpointId` (and every one before it) is complete. */
  notifyCheckpointComplete?(checkpointId: number): Promise<void>;
  close?(): Promise<void>;
  /** Whether an error of this reader's client may pass on a restart; asked by the restart strategy. */
  isTransient?(error: unknown): boolean;
}

/** Deals splits to subtasks: split `i` (in a stable order) goes to subtask `i mod parallelism`. @public */
export function ownsSplit(splitIndex: number, context: SourceReaderContext): boolean {
  return splitIndex % context.parallelism === context.subtask;
}

/**
 * Another rule, for a source with a split per key (split `i` holds the records of key `i`):
 * the subtask that owns the key's group reads it, so a keyBy on that key after the source
 * never leaves the subtask's key groups — what a sharded keyed job needs (docs/design.md §2,
 * Shards), at any number of shards.
 * @public
 */
export function splitPerKey(maxParallelism: number): (splitIndex: number, context: SourceReaderContext) => boolean {
  return (splitIndex, context) =>
    subtaskForKeyGroup(keyGroupOf(splitIndex, maxParallelism), maxParallelism, context.parallelism) === context.subtask;
}
