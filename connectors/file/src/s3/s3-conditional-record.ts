import { randomUUID } from "node:crypto";
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { type ConditionalRecord, ConfigurationError, ExactlyError, type VersionedValue } from "@exactly/core";
import {
  createS3Client,
  isNotFound,
  isNotImplemented,
  isPreconditionFailed,
  isTransientS3Error,
  requireSafeKeyPrefix,
  type S3ConnectionOptions,
  s3ErrorName,
} from "./s3-connection.ts";

export interface S3ConditionalRecordOptions {
  readonly bucket: string;
  /** The object's key: '/'-separated segments, none empty, '.' or '..', no leading or trailing '/'. */
  readonly key: string;
  /** How to reach the server; a client is made from it and destroyed by {@link S3ConditionalRecord.close}. */
  readonly connection?: S3ConnectionOptions;
  /** A client of the caller's to use instead (the caller destroys it). */
  readonly client?: S3Client;
}

/** What the object holds: the value, and who wrote it, so that every write has an ETag of its own. */
interface StoredRecord {
  readonly value: unknown;
  readonly write: string;
}

/**
 * A {@link ConditionalRecord} in one S3 object. Its version is the object's ETag: a replacement
 * is a PUT with `If-Match: <ETag>`, a creation a PUT with `If-None-Match: *`, and the server
 * answers 412 (or 409 to concurrent conditional writes) to every writer but one.
 *
 * An ETag is the MD5 of the body, so each write stores a nonce beside the value: an equal
 * value written again gets a new version, and a stale writer cannot win because the record
 * came back to the body it read. The nonce also settles a PUT the SDK retried after its
 * answer was lost: the retry meets 412 against its own write, and reading the nonce back
 * tells it that it won. (A 412 whose object was already replaced again by another writer
 * reads as lost: safe for a lease, which then reads and sees the newer owner.)
 *
 * A server that ignores the conditions would let two owners both win. Before its first
 * write the record checks the server on a probe object beside its key, and refuses one that
 * replaces an object it was told to keep with a {@link ConfigurationError} naming the endpoint.
 */
export class S3ConditionalRecord<T> implements ConditionalRecord<T> {
  readonly bucket: string;
  readonly key: string;
  private readonly connection: S3ConnectionOptions;
  private readonly given: S3Client | undefined;
  private own: S3Client | undefined;
  private conditionalWrites: Promise<void> | undefined;

  constructor(options: S3ConditionalRecordOptions) {
    if (!options.bucket) throw new ConfigurationError("bucket", "must be a bucket name");
    this.bucket = options.bucket;
    this.key = requireRecordKey(options.key);
    this.connection = options.connection ?? {};
    this.given = options.client;
  }

  describe(): string {
    return `s3://${this.bucket}/${this.key}`;
  }

  private get client(): S3Client {
    if (this.given) return this.given;
    this.own ??= createS3Client(this.connection);
    return this.own;
  }

  async read(): Promise<VersionedValue<T> | undefined> {
    const stored = await this.get();
    return stored && { value: stored.record.value as T, version: stored.version };
  }

  async replace(expected: string | undefined, value: T): Promise<string | undefined> {
    await this.requireConditionalWrites();
    const write = randomUUID();
    const condition = expected === undefined ? { IfNoneMatch: "*" } : { IfMatch: expected };
    try {
      const { ETag } = await this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: this.key,
          Body: JSON.stringify({ value, write } satisfies StoredRecord),
          ContentType: "application/json",
          ...condition,
        }),
      );
      if (ETag) return ETag;
    } catch (error) {
      // If-Match on a key that is gone answers 404: not at `expected` either.
      if (!isConflict(error) && !isNotFound(error)) throw error;
    }
    // Lost, unless the object is this very write (a retried PUT, or a server that sent no ETag).
    const stored = await this.get();
    return stored?.record.write === write ? stored.version : undefined;
  }

  isTransient(error: unknown): boolean {
    return isTransientS3Error(error);
  }

  /** Destroys the client this record made; a client it was given is left to its owner. */
  async close(): Promise<void> {
    this.own?.destroy();
    this.own = undefined;
  }

  private get where(): string {
    return `s3://${this.bucket}/${this.key}`;
  }

  private async get(): Promise<{ record: StoredRecord; version: string } | undefined> {
    let text: string;
    let version: string | undefined;
    try {
      const result = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key }));
      text = (await result.Body?.transformToString("utf8")) ?? "";
      version = result.ETag;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
    let record: Partial<StoredRecord> | undefined;
    try {
      record = JSON.parse(text) as Partial<StoredRecord>;
    } catch {
      record = undefined;
    }
    if (version === undefined || typeof record?.write !== "string" || !("value" in record)) {
      throw new ExactlyError(
        "CONDITIONAL_RECORD_INVALID",
        `${this.where} is not a record written by S3ConditionalRecord (or the server sent no ETag); it is left as it is`,
      );
    }
    return { record: record as StoredRecord, version };
  }

  /** Once per record, shared by concurrent first writes; checked again after a failure to answer. */
  private requireConditionalWrites(): Promise<void> {
    this.conditionalWrites ??= this.probeConditionalWrites().catch((error: unknown) => {
      this.conditionalWrites = undefined;
      throw error;
    });
    return this.conditionalWrites;
  }

  /**
   * On a probe object of its own: a second `If-None-Match: *` PUT and an `If-Match` PUT on a
   * wrong ETag must both be refused. Never on the record's key, which a server that ignores
   * the condition would overwrite.
   */
  private async probeConditionalWrites(): Promise<void> {
    const probe = `${this.key}.probe-${randomUUID()}`;
    const put = async (condition: { IfNoneMatch: string } | { IfMatch: string }): Promise<boolean> => {
      try {
        await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: probe, Body: "probe", ...condition }));
        return true;
      } catch (error) {
        if (isPreconditionFailed(error)) return false;
        if (isNotImplemented(error)) throw await this.refuse("does not implement conditional PUTs");
        throw error;
      }
    };
    try {
      // The probe's key is this record's alone: found after a 412, it is this PUT's own first attempt.
      if (!(await put({ IfNoneMatch: "*" })) && !(await this.exists(probe))) {
        throw await this.refuse("refused to create a new object with If-None-Match");
      }
      if (await put({ IfNoneMatch: "*" })) {
        throw await this.refuse("ignores If-None-Match: it replaced an existing object");
      }
      if (await put({ IfMatch: '"00000000000000000000000000000000"' })) {
        throw await this.refuse("ignores If-Match: it replaced an object whose ETag did not match");
      }
    } finally {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: probe })).catch(() => {});
    }
  }

  private async exists(key: string): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  private async refuse(why: string): Promise<ConfigurationError> {
    return new ConfigurationError(
      "connection",
      `the S3 server at ${await this.endpoint()} ${why}; S3ConditionalRecord (${this.where}) needs conditional ` +
        "writes (If-Match, If-None-Match on PutObject) so that two writers can never both replace one version",
    );
  }

  /** The server's address as the client resolves it (AWS's regional endpoint when none was set). */
  private async endpoint(): Promise<string> {
    try {
      const endpoint = await this.client.config.endpoint?.();
      if (endpoint) {
        const port = endpoint.port === undefined ? "" : `:${endpoint.port}`;
        return `${endpoint.protocol}//${endpoint.hostname}${port}${endpoint.path === "/" ? "" : endpoint.path}`;
      }
    } catch {
      // Named below from what was configured.
    }
    return this.connection.endpoint ?? `AWS S3 (region ${await this.client.config.region().catch(() => "unknown")})`;
  }
}

/** 412 PreconditionFailed, or 409 ConditionalRequestConflict to one of concurrent conditional writes. */
function isConflict(error: unknown): boolean {
  return isPreconditionFailed(error) || s3ErrorName(error) === "ConditionalRequestConflict";
}

/** A key checked as a key prefix is (no climbing out of its folder), and naming an object, not a folder. */
function requireRecordKey(key: string): string {
  if (typeof key !== "string" || key === "" || key.endsWith("/")) {
    throw new ConfigurationError("key", `must name an object (not empty, no trailing '/'), got ${JSON.stringify(key)}`);
  }
  return requireSafeKeyPrefix(key, "key");
}
