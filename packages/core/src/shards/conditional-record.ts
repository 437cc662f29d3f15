/**
 * The one primitive shard ownership rests on (docs/design.md §2, Shards): a small record that
 * is replaced only if nobody replaced it since it was read — S3's `If-Match`/`If-None-Match`,
 * a Postgres row updated `WHERE version = $expected`, a file created with `O_EXCL`. A shard's
 * lease and its checkpoint head are each one such record; every adapter implements this port
 * and nothing else, and the lease and fencing logic above it is written once.
 */
import { ExactlyError } from "../errors.ts";

/** A record as read: its value and the version a replacement must name. @public */
export interface VersionedValue<T> {
  readonly value: T;
  /** Opaque to callers (an ETag, a row version, a file sequence number). */
  readonly version: string;
}

/**
 * A record replaced only if unchanged since it was read, which a shard's lease and checkpoint head
 * rest on. A checkpoint storage that can hold a sharded job's checkpoints gives one
 * (`CheckpointStorage.record`); a job's lease may live in another (`ShardLeaseSettings.record`).
 * @public
 */
export interface ConditionalRecord<T> {
  /** What the record holds now, or undefined when it was never written. */
  read(): Promise<VersionedValue<T> | undefined>;
  /**
   * Replaces the record with `value` if it is still at `expected` (undefined: only if it does
   * not exist yet). Returns the new version, or undefined when another writer replaced or
   * created it first; never overwrites a version it was not given. Throws only when the store
   * could not answer (then the write may or may not have happened: read again).
   */
  replace(expected: string | undefined, value: T): Promise<string | undefined>;
  /** Whether an error of this store may pass on retry (server restarting, connection cut). */
  isTransient?(error: unknown): boolean;
  /** Lets go of the clients this record created. */
  close?(): Promise<void>;
  /** Where the record is (a path, an s3:// URL, a table row), for messages that must name it. */
  describe?(): string;
}

/** The record's place for a message: what it says of itself, or `fallback`. */
export function describeRecord(record: ConditionalRecord<unknown>, fallback: string): string {
  return record.describe?.() ?? fallback;
}

/**
 * A record holds what exactly never writes (an epoch that is not a whole number, one no owner
 * can follow): it was edited by hand, or by something else. Never retried: the next attempt
 * would read the same.
 * @public
 */
export class InvalidRecordError extends ExactlyError {
  override readonly permanent = true;
  constructor(where: string, message: string) {
    super("INVALID_RECORD", `${where}: ${message}`);
  }
}
