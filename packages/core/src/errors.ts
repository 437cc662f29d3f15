import type { RecordPosition } from "./records.ts";
import { formatPosition } from "./records.ts";

/**
 * Every `code` an {@link ExactlyError} of core or of a built-in connector carries: callers
 * branch on these (and the restart strategy classifies by them), never on message text. A
 * new error class of this repository adds its code here; a custom sink's own error may carry
 * a code of its own.
 * @public
 */
export type ErrorCode =
  // core (errors.ts)
  | "CONFIGURATION"
  | "RECORD_WRITE"
  | "RECORD_PROCESSING"
  | "TRANSACTION_LOST"
  | "COMMIT_FAILED"
  | "TRANSIENT"
  | "JOB_FAILED"
  | "CHECKPOINT_STORAGE"
  | "SINK_NOT_OPEN"
  | "CANCELLED"
  // core: a worker thread's failure whose own error carried no code
  | "WORKER_FAILED"
  // a checkpoint location another process writes to (@exactly/file/s3's checkpoint storage)
  | "CHECKPOINT_OWNERSHIP"
  // core (shards/): this process no longer owns its shard; another took it at a later epoch
  | "SHARD_LEASE_LOST"
  | "SHARD_FENCED"
  // core (shards/): a lease, head or layout record holds what exactly never writes
  | "INVALID_RECORD"
  // @exactly/conformance: a sink definition that contradicts itself
  | "CONFORMANCE_DEFINITION"
  // @exactly/file
  | "PART_LOST"
  | "PART_EXISTS"
  | "PLANTED_FILE"
  | "INVALID_LINE"
  | "UNSAFE_BUCKET_PATH"
  // @exactly/kafka
  | "OFFSET_OUT_OF_RANGE"
  | "KAFKAJS_INTERNALS"
  // @exactly/postgres
  | "ROW_REJECTED"
  // @exactly/cli: the demo job's process ended without finishing (not killed by the demo)
  | "DEMO_FAILED";

/**
 * A code outside {@link ErrorCode}, which a custom sink's error may carry. (`string & {}` keeps
 * the built-in codes offered as completions where a code is written.)
 * @public
 */
export type CustomErrorCode = string & {};

/**
 * Base class of every error the runtime raises on purpose. Callers branch on
 * `code` (or `instanceof`), never on message text.
 * @public
 */
export class ExactlyError extends Error {
  readonly code: ErrorCode | CustomErrorCode;
  /**
   * Whether no restart can get past this failure (the data it needs is gone, a setting is
   * wrong): the restart strategy fails the job at once. A connector's error sets it.
   */
  readonly permanent: boolean = false;
  constructor(code: ErrorCode | CustomErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A setting that would lose data silently, or that cannot work. Names the setting. @public */
export class ConfigurationError extends ExactlyError {
  readonly setting: string;
  constructor(setting: string, message: string, options?: ErrorOptions) {
    super("CONFIGURATION", `${setting}: ${message}`, options);
    this.setting = setting;
  }
}

/** Returns `value` if it is a positive integer; otherwise refuses it, naming the setting. @internal */
export function requirePositiveInteger(setting: string, value: number): number {
  if (!Number.isInteger(value) || value < 1)
    throw new ConfigurationError(setting, `must be a positive integer, got ${value}`);
  return value;
}

/** A record could not be written; names where the record came from. @public */
export class RecordWriteError extends ExactlyError {
  readonly position: RecordPosition | undefined;
  constructor(position: RecordPosition | undefined, cause: unknown) {
    const where = position ? formatPosition(position) : "unknown position";
    super("RECORD_WRITE", `record at ${where} could not be written: ${describe(cause)}`, { cause });
    this.position = position;
  }
}

/**
 * A pre-committed transaction can no longer be committed (for example it outlived the
 * external system's transaction timeout). Its data may be lost: this is never silent.
 * @public
 */
export class TransactionLostError extends ExactlyError {
  readonly checkpointId: number;
  constructor(checkpointId: number, message: string, options?: ErrorOptions) {
    super("TRANSACTION_LOST", `possible data loss in checkpoint ${checkpointId}: ${message}`, options);
    this.checkpointId = checkpointId;
  }
}

/** A commit failed for good after its retries; the job fails and recovery recommits. @public */
export class CommitFailedError extends ExactlyError {
  readonly checkpointId: number;
  constructor(checkpointId: number, cause: unknown) {
    super("COMMIT_FAILED", `commit of checkpoint ${checkpointId} failed: ${describe(cause)}`, { cause });
    this.checkpointId = checkpointId;
  }
}

/** An error the sink says may pass if retried (timeouts, lost connections). @public */
export class TransientError extends ExactlyError {
  constructor(message: string, options?: ErrorOptions) {
    super("TRANSIENT", message, options);
  }
}

/**
 * The job failed for good: the failure is permanent, or repeated more often than its restart strategy allows.
 * @public
 */
export class JobFailedError extends ExactlyError {
  readonly attempts: number;
  /** Why the restart strategy gave up. */
  readonly reason: string | undefined;
  constructor(attempts: number, cause: unknown, reason?: string) {
    super("JOB_FAILED", `job failed after ${attempts} attempt(s)${reason ? ` (${reason})` : ""}: ${describe(cause)}`, {
      cause,
    });
    this.attempts = attempts;
    this.reason = reason;
  }
}

/** Checkpoint data on disk is unreadable or inconsistent. @public */
export class CheckpointStorageError extends ExactlyError {
  constructor(message: string, options?: ErrorOptions) {
    super("CHECKPOINT_STORAGE", message, options);
  }
}

/** A sink's hook was called before `open` or after `close`: the runtime never does that. @public */
export class SinkNotOpenError extends ExactlyError {
  constructor(what = "sink") {
    super("SINK_NOT_OPEN", `${what} is not open`);
  }
}

/** The job was cancelled (another task failed, or the caller cancelled it). @public */
export class CancelledError extends ExactlyError {
  constructor(message = "job cancelled") {
    super("CANCELLED", message);
  }
}

export function describe(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/** A user function (map, filter, process, …) threw on a record; names where it came from. @public */
export class RecordProcessingError extends ExactlyError {
  readonly position: RecordPosition | undefined;
  readonly stage: string;
  constructor(stage: string, position: RecordPosition | undefined, cause: unknown) {
    const where = position ? formatPosition(position) : "unknown position";
    super("RECORD_PROCESSING", `stage ${stage} failed on record at ${where}: ${describe(cause)}`, { cause });
    this.position = position;
    this.stage = stage;
  }
}
