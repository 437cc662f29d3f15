import { type CheckpointStorage, ExactlyError } from "@exactly/core";

/**
 * Where part files live. A part is written to a hidden in-progress location, made durable
 * at pre-commit, and published atomically at commit. The rolling sink holds the lifecycle;
 * a writer only knows its storage (local disk now, S3 next), as Flink's RecoverableWriter.
 */
export interface PartDescriptor {
  /** Bucket directory relative to the base ('' for the base itself), already validated. */
  readonly bucket: string;
  /** The published file name inside the bucket. */
  readonly name: string;
  /** Bytes pre-committed; set once the part is closed for commit. */
  readonly length?: number;
  /**
   * Written straight to its published name (AT_LEAST_ONCE): visible as it is written,
   * never removed by abort, and commit has nothing left to do.
   */
  readonly visible?: boolean;
  /**
   * What the writer needs to publish the part after a crash, beyond its name (S3: the
   * multipart upload's id, its parts and nonce). JSON, kept in checkpoint state; the sink
   * never looks inside.
   */
  readonly recoverable?: unknown;
}

/** A pre-committed part is neither in progress nor published: its data is gone. */
export class PartLostError extends ExactlyError {
  constructor(part: PartDescriptor, reason = "has no in-progress data and was never published") {
    super("PART_LOST", `part ${part.bucket ? `${part.bucket}/` : ""}${part.name} ${reason}`);
  }
}

/** Publishing would replace other data under the part's name: writers never overwrite. */
export class PartExistsError extends ExactlyError {
  constructor(path: string, reason = "it exists with another length") {
    super("PART_EXISTS", `refusing to overwrite ${path}: ${reason}`);
  }
}

/**
 * Something other than the sink's own regular file is where the sink reads or writes a part
 * (a symlink, a directory, a file left there by someone else): the sink never follows or
 * reuses it. A restart cannot get past it; someone has to look.
 */
export class PlantedFileError extends ExactlyError {
  override readonly permanent = true;
  readonly path: string;
  constructor(path: string, reason: string) {
    super("PLANTED_FILE", `refusing to use ${path}: ${reason}`);
    this.path = path;
  }
}

export interface OpenPart {
  readonly descriptor: PartDescriptor;
  /** Bytes accepted so far (buffered or written). */
  readonly length: number;
  /**
   * Buffers data; writes it out once enough has gathered. A returned promise must settle
   * before the next call: writes of one part are never concurrent.
   */
  append(data: string): void | Promise<void>;
  /** Writes out what is buffered (not durably). */
  flush(): Promise<void>;
  /** Writes out everything, makes it durable, and closes: the part can now be committed. */
  closeForCommit(): Promise<PartDescriptor>;
  /** Drops the part and what was written. */
  discard(): Promise<void>;
}

export interface LingeringFilter {
  /** Whether a part of this sink, of subtask index `subtask`, is ours to clean up. */
  ownsSubtaskIndex(subtask: number): boolean;
  /** Whether a restored state references this part (it must be left alone). */
  isReferenced(part: PartDescriptor): boolean;
}

export interface RecoverableWriter {
  /**
   * Whether a failed commit may succeed when retried (a dropped connection, a server
   * restarting). Default: the runtime's transient error codes.
   */
  isTransient?(error: unknown): boolean;
  /**
   * Checks, when the sink opens and before it touches any part, that the storage is there
   * and accepts us; refuses a setting that cannot work with a ConfigurationError naming it
   * (S3: a bucket that does not exist, credentials the server refuses, a prefix inside the
   * job's checkpoint location). `checkpoints` is the job's checkpoint storage: no part may be
   * written among its objects.
   */
  open?(checkpoints?: CheckpointStorage): Promise<void>;
  openPart(part: PartDescriptor): Promise<OpenPart>;
  /** Releases the writer's client (sockets) when the sink closes; it may be opened again. */
  close?(): void | Promise<void>;
  /** Publishes a closed part. Idempotent: a part already published is left as it is. */
  commit(part: PartDescriptor): Promise<void>;
  /** Publishes a part a previous process closed; trims bytes beyond the recorded length. */
  recoverAndCommit(part: PartDescriptor): Promise<void>;
  /** Removes a part's in-progress data. Idempotent. */
  abort(part: PartDescriptor): Promise<void>;
  /**
   * Removes in-progress parts of this sink (names starting with `partPrefix`) that the
   * filter owns and no restored state references. Returns what it removed.
   */
  abortLingering(
    partPrefix: string,
    parseSubtask: (name: string) => number | undefined,
    filter: LingeringFilter,
  ): Promise<string[]>;
  /**
   * For visible parts (AT_LEAST_ONCE), after a crash: makes this sink's parts that the
   * filter owns whole again. On local disk a line torn by the crash is cut off the end of a
   * published part; on S3 an object is never torn, and the uploads the crash left open are
   * aborted instead. Returns the parts it repaired or removed.
   */
  repairTornTails(
    partPrefix: string,
    parseSubtask: (name: string) => number | undefined,
    filter: LingeringFilter,
  ): Promise<string[]>;
}
