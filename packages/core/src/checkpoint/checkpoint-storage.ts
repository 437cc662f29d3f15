/**
 * Durable checkpoint storage. A checkpoint is complete exactly when its metadata is
 * durable; everything before that (task state files) is invisible to recovery.
 */
import type { ConditionalRecord } from "../shards/conditional-record.ts";
import type { ShardSpec } from "../shards/shard-spec.ts";

/**
 * What a complete checkpoint records, written last and atomically: who took it, each stage's
 * parallelism, and the handle of each task's state.
 * @public
 */
export interface CheckpointMetadata {
  readonly checkpointId: number;
  readonly timestamp: number;
  readonly jobName: string;
  /**
   * Who wrote it: the job's name and id (docs/design.md I10), and the group of a job run as
   * groups (§2, Groups). A job restores only checkpoints of its own id and group; absent in
   * checkpoints taken before it was recorded, whose id is `jobName`.
   */
  readonly job?: { readonly name: string; readonly id: string; readonly group?: string };
  /**
   * Per stage: the parallelism it ran with, so restore can redistribute state, and its kind
   * (for tools that read checkpoints; absent in checkpoints taken before it was recorded).
   */
  readonly stages: Record<string, { readonly parallelism: number; readonly kind?: "source" | "operator" | "sink" }>;
  readonly maxParallelism: number;
  /** Task key (`<stage>/<subtask>`) → handle returned by `writeTaskState`. */
  readonly taskStates: Record<string, string>;
  /** Set for the checkpoint a job took when it finished or stopped gracefully. */
  readonly final?: boolean;
  /**
   * In a sharded job (docs/design.md §2, Shards): the shard that took it, and the epoch it
   * owned the shard at. Stage parallelisms and task keys are then over every shard.
   */
  readonly shard?: ShardSpec;
  readonly epoch?: number;
  /** The layout generation (shards/shard-layout.ts) it was taken in. */
  readonly generation?: number;
}

/** One checkpoint folder as `exactly inspect` shows it: complete (with metadata) or not. @public */
export interface InspectedCheckpoint {
  readonly checkpointId: number;
  /** Undefined while (or because) the checkpoint never completed. */
  readonly metadata: CheckpointMetadata | undefined;
  /** For a complete checkpoint: each task's state and its size; empty otherwise. */
  readonly states: ReadonlyMap<string, { readonly bytes: number; readonly state: unknown }>;
  /**
   * Every sink committed it, as recorded by {@link CheckpointStorage.markCommitted}: true for
   * the final checkpoint of a job that finished or stopped gracefully. False says nothing was
   * recorded, not that the commit failed.
   */
  readonly committed: boolean;
}

/** A complete checkpoint as a restart loads it: its metadata and each task's state. @public */
export interface RestoredCheckpoint {
  readonly metadata: CheckpointMetadata;
  /** Task key → the state that task acknowledged. */
  readonly states: ReadonlyMap<string, unknown>;
  /**
   * Stages restored under a new uid (new uid → the uid in the checkpoint), as the job's
   * `renamedFrom` declared them: the metadata and states above already use the new uids.
   */
  readonly renamed?: Readonly<Record<string, string>>;
}

/** An append-only log of one sink subtask's records for one checkpoint (write-ahead sinks). @public */
export interface LogStore {
  /**
   * Adds lines to a log. A store may gather appends and write them behind (the file system's
   * does): only `sync` promises they are stored, and a write that failed is thrown by a later
   * append or by `sync`, never lost.
   */
  append(name: string, lines: readonly string[]): Promise<void>;
  /** Makes everything appended so far durable. */
  sync(name: string): Promise<void>;
  /** The lines appended, in order, in batches (a batch per chunk read, not a promise per line). */
  read(name: string): AsyncIterable<readonly string[]>;
  /** The same log as bytes, as appended (each line ends in `\n`), in chunks that need not end at a line. */
  readBytes(name: string): AsyncIterable<Uint8Array>;
  delete(name: string): Promise<void>;
  list(): Promise<string[]>;
  /** Lets go of what the store holds open (file handles), when its sink closes; the logs stay. */
  close?(): Promise<void>;
}

/** A task state written: the handle the metadata lists, and the bytes it took. @public */
export interface StoredTaskState {
  readonly handle: string;
  readonly bytes: number;
}

/**
 * Where a job's checkpoints are kept, durably: {@link FileSystemCheckpointStorage}, or a storage of
 * a connector's (the file connector's `S3CheckpointStorage`) or of your own.
 * @public
 */
export interface CheckpointStorage {
  /** Highest checkpoint id ever started, so ids never repeat across restarts. */
  highestCheckpointId(): Promise<number>;
  /** Reserves `checkpointId` durably before any barrier for it is sent. */
  beginCheckpoint(checkpointId: number): Promise<void>;
  /** Stores one task's state (JSON) for `checkpointId`; returns its handle and size. */
  writeTaskState(checkpointId: number, taskKey: string, state: unknown): Promise<StoredTaskState>;
  /** Atomically and durably completes the checkpoint. */
  completeCheckpoint(metadata: CheckpointMetadata): Promise<void>;
  /** Drops a declined checkpoint's state (its id stays used). */
  discardCheckpoint(checkpointId: number): Promise<void>;
  loadLatest(): Promise<RestoredCheckpoint | undefined>;
  listCompleted(): Promise<CheckpointMetadata[]>;
  /**
   * Records durably that every sink committed complete checkpoint `checkpointId`. The
   * coordinator calls it for the final checkpoint, once its commits are done and before the job
   * ends, so tools (`exactly inspect`) show that checkpoint's pending transactions as committed.
   * Recovery never reads it: it commits a restored checkpoint's transactions either way.
   */
  markCommitted?(checkpointId: number): Promise<void>;
  /** Every checkpoint it holds, oldest first, read only (for `exactly inspect`). */
  inspect?(): Promise<InspectedCheckpoint[]>;
  /** A log store for one namespace (a sink id), kept beside the checkpoints. */
  logStore(namespace: string): LogStore;
  /** Whether a failure of this storage may pass on a restart (its server restarting); asked by the restart strategy. */
  isTransient?(error: unknown): boolean;
  /**
   * What a sharded job needs of its storage (docs/design.md §2, Shards); a storage without
   * them cannot hold a sharded job's checkpoints. `scoped` is the same storage in a
   * sub-folder (or key prefix) `name`; `scopes` names the sub-folders that exist.
   */
  scoped?(name: string): CheckpointStorage;
  scopes?(): Promise<string[]>;
  /** Deletes the sub-folder `name` and everything in it (a shard's folder of an epoch no checkpoint needs). */
  removeScope?(name: string): Promise<void>;
  /** A {@link ConditionalRecord} named `name` beside the checkpoints (a shard's lease and head). */
  record?<T>(name: string): ConditionalRecord<T>;
  /** One complete checkpoint, by id; undefined when it has no metadata. */
  load?(checkpointId: number): Promise<RestoredCheckpoint | undefined>;
}
