import { randomUUID } from "node:crypto";
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import {
  type CheckpointMetadata,
  type CheckpointStorage,
  CheckpointStorageError,
  type ConditionalRecord,
  ConfigurationError,
  type InspectedCheckpoint,
  type LogStore,
  type RestoredCheckpoint,
  type StoredTaskState,
} from "@exactly/core";
import {
  applyRetention,
  type CheckpointFolders,
  COMMITTED,
  inspectFolders,
  listCompleted,
  loadCheckpoint,
  loadLatest,
  METADATA,
  ShardCheckpointStorage,
} from "@exactly/core/internal";
import { S3ConditionalRecord } from "./s3-conditional-record.ts";
import {
  createS3Client,
  isNotFound,
  isNotImplemented,
  isPreconditionFailed,
  isTransientS3Error,
  joinKey,
  parseS3Url,
  type S3ConnectionOptions,
} from "./s3-connection.ts";

const BEGIN = "_begin";
const CHECKPOINT_PREFIX = /^chk-(\d+)\/$/;
/** A log segment is uploaded once this much is buffered, and at every sync. */
const LOG_SEGMENT_BYTES = 8 * 1024 * 1024;

export interface S3CheckpointStorageOptions {
  /** `s3://bucket/prefix`: where this job's checkpoints live. One job per location. */
  readonly location: string;
  readonly connection?: S3ConnectionOptions;
  /** How many completed checkpoints to keep; older ones are deleted. Default 3. */
  readonly retained?: number;
}

/** Where an S3 checkpoint location is: its server (undefined: AWS), bucket and key prefix. */
export interface S3Location {
  readonly endpoint: string | undefined;
  readonly bucket: string;
  readonly prefix: string;
}

/**
 * Where the job's checkpoints are, when they are on S3: for an S3 sink, which must keep its
 * keys out of them. A sharded job's storage keeps its write-ahead logs at the location's root,
 * so its log store says where that is; any other storage is not on S3.
 */
export function s3LocationOf(storage: CheckpointStorage | undefined): S3Location | undefined {
  if (storage instanceof S3CheckpointStorage) return storage.where;
  if (storage instanceof ShardCheckpointStorage) {
    const logs = storage.logStore("");
    return logs instanceof S3LogStore ? logs.where : undefined;
  }
  return undefined;
}

/** The location's URL, as messages name it. */
export function s3LocationUrl(location: S3Location): string {
  return `s3://${location.bucket}${location.prefix === "" ? "" : `/${location.prefix}`}`;
}

/**
 * Two processes run one job: the other one reserved or completed a checkpoint id this one
 * was about to use. Never retried: running a job twice on one checkpoint location would let
 * both commit output for the same records.
 */
export class CheckpointOwnershipError extends CheckpointStorageError {
  constructor(location: string, checkpointId: number, what: "begun" | "completed") {
    super(
      `checkpoint ${checkpointId} at ${location} was ${what} by another process: two processes are running this job ` +
        "on one checkpoint location; stop one of them (this one stops here)",
    );
    Object.defineProperty(this, "code", { value: "CHECKPOINT_OWNERSHIP" });
  }
}

/**
 * Checkpoints on S3, as `FileSystemCheckpointStorage` (`@exactly/core`) keeps them on disk:
 * `chk-<id>/_begin` reserves an id, one object per task state, and `chk-<id>/_metadata`
 * written last makes the checkpoint complete (an S3 PUT is atomic: the object is there
 * whole or not at all). Both `_begin` and `_metadata` are written with `If-None-Match: *`,
 * so of two processes that believe they own the job, only one can reserve or complete an
 * id; the other fails with {@link CheckpointOwnershipError}. A server that ignores the
 * condition is refused at the first checkpoint: without it that guarantee is gone.
 */
export class S3CheckpointStorage implements CheckpointStorage {
  readonly location: string;
  readonly bucket: string;
  readonly prefix: string;
  private readonly retained: number;
  private readonly connection: S3ConnectionOptions;
  /** Written into `_begin` and `_metadata`: a retried PUT that finds its own object is not a conflict. */
  private readonly owner = randomUUID();
  private s3: S3Client | undefined;
  private conditionalWritesChecked = false;

  constructor(options: S3CheckpointStorageOptions) {
    const { bucket, prefix } = parseS3Url(options.location, "checkpoint location");
    this.location = options.location;
    this.bucket = bucket;
    this.prefix = prefix;
    this.connection = options.connection ?? {};
    this.retained = options.retained ?? 3;
    if (!Number.isInteger(this.retained) || this.retained < 1) {
      throw new CheckpointStorageError(`retained must be a positive integer, got ${this.retained}`);
    }
  }

  get client(): S3Client {
    this.s3 ??= createS3Client(this.connection);
    return this.s3;
  }

  get where(): S3Location {
    return { endpoint: this.connection.endpoint, bucket: this.bucket, prefix: this.prefix };
  }

  /** Ends the client's sockets; the storage makes a new client if it is used again. */
  /** The server restarting or unreachable: the restart strategy restarts the job however often that repeats. */
  isTransient(error: unknown): boolean {
    return isTransientS3Error(error);
  }

  close(): void {
    this.s3?.destroy();
    this.s3 = undefined;
  }

  private key(...rest: string[]): string {
    return joinKey(this.prefix, ...rest);
  }

  private checkpointKey(checkpointId: number, name: string): string {
    return this.key(`chk-${checkpointId}`, name);
  }

  private async checkpointIds(): Promise<number[]> {
    const ids: number[] = [];
    const base = this.prefix === "" ? "" : `${this.prefix}/`;
    for await (const page of this.list(base, "/")) {
      for (const common of page.CommonPrefixes ?? []) {
        const match = CHECKPOINT_PREFIX.exec(common.Prefix?.slice(base.length) ?? "");
        if (match?.[1]) ids.push(Number(match[1]));
      }
    }
    return ids.sort((a, b) => a - b);
  }

  private async *list(prefix: string, delimiter?: string) {
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: prefix,
          ...(delimiter === undefined ? {} : { Delimiter: delimiter }),
          ...(token === undefined ? {} : { ContinuationToken: token }),
        }),
      );
      yield page;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  private async get(key: string): Promise<string | undefined> {
    try {
      const result = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return (await result.Body?.transformToString("utf8")) ?? "";
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** PUTs `key` unless it exists; false when it does. */
  private async putIfAbsent(key: string, body: string): Promise<boolean> {
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, IfNoneMatch: "*" }));
      return true;
    } catch (error) {
      if (isPreconditionFailed(error)) return false;
      throw error;
    }
  }

  /**
   * Refuses a server that accepts a second `If-None-Match: *` PUT of one key (or does not
   * implement the header): on it two owners of one job could both complete a checkpoint.
   */
  private async requireConditionalWrites(): Promise<void> {
    if (this.conditionalWritesChecked) return;
    const probe = this.key("_probe", this.owner);
    const refuse = (why: string) =>
      new ConfigurationError(
        "checkpoint location",
        `${this.location}: the S3 server ${why}; S3CheckpointStorage needs conditional writes (If-None-Match) ` +
          "so that two processes can never both complete one checkpoint",
      );
    try {
      if (!(await this.putIfAbsent(probe, "probe"))) throw refuse("refused a conditional PUT of a new key");
      if (await this.putIfAbsent(probe, "probe")) throw refuse("ignores If-None-Match: it replaced an existing object");
    } catch (error) {
      if (isNotImplemented(error)) throw refuse("does not implement If-None-Match");
      throw error;
    } finally {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: probe })).catch(() => {});
    }
    this.conditionalWritesChecked = true;
  }

  async highestCheckpointId(): Promise<number> {
    return (await this.checkpointIds()).at(-1) ?? 0;
  }

  async beginCheckpoint(checkpointId: number): Promise<void> {
    await this.requireConditionalWrites();
    const key = this.checkpointKey(checkpointId, BEGIN);
    const body = JSON.stringify({ owner: this.owner, at: Date.now() });
    if (await this.putIfAbsent(key, body)) return;
    // Ours if an earlier attempt of this PUT went through and its answer was lost.
    if ((await this.ownerOf(key)) !== this.owner)
      throw new CheckpointOwnershipError(this.location, checkpointId, "begun");
  }

  private async ownerOf(key: string): Promise<string | undefined> {
    const text = await this.get(key);
    try {
      return text === undefined ? undefined : (JSON.parse(text) as { owner?: string }).owner;
    } catch {
      return undefined;
    }
  }

  async writeTaskState(checkpointId: number, taskKey: string, state: unknown): Promise<StoredTaskState> {
    const file = `${encodeURIComponent(taskKey)}.json`;
    const body = JSON.stringify(state);
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: this.checkpointKey(checkpointId, file),
        Body: body,
        ContentType: "application/json",
      }),
    );
    return { handle: file, bytes: Buffer.byteLength(body) };
  }

  async completeCheckpoint(metadata: CheckpointMetadata): Promise<void> {
    const key = this.checkpointKey(metadata.checkpointId, METADATA);
    if (!(await this.putIfAbsent(key, JSON.stringify({ ...metadata, owner: this.owner })))) {
      if ((await this.ownerOf(key)) !== this.owner) {
        throw new CheckpointOwnershipError(this.location, metadata.checkpointId, "completed");
      }
    }
    await applyRetention(this.folders, metadata.checkpointId, this.retained);
  }

  async markCommitted(checkpointId: number): Promise<void> {
    await this.putObject(this.checkpointKey(checkpointId, COMMITTED), Buffer.alloc(0));
  }

  async discardCheckpoint(checkpointId: number): Promise<void> {
    // Keep `_begin`: it still reserves the id.
    await this.deleteUnder(this.key(`chk-${checkpointId}`, ""), (key) => !key.endsWith(`/${BEGIN}`));
  }

  private async deleteUnder(prefix: string, keep: (key: string) => boolean = () => true): Promise<void> {
    for await (const page of this.list(prefix)) {
      const keys = (page.Contents ?? []).map((o) => o.Key).filter((k): k is string => k !== undefined && keep(k));
      if (keys.length === 0) continue;
      const result = await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true },
        }),
      );
      const failed = result.Errors ?? [];
      if (failed.length > 0) {
        throw new CheckpointStorageError(
          `could not delete ${failed.length} object(s) under s3://${this.bucket}/${prefix}: ${failed[0]?.Code} ${failed[0]?.Message}`,
        );
      }
    }
  }

  /** The folder primitives the lifecycle code shared with the file system works on. */
  private readonly folders: CheckpointFolders = {
    ids: () => this.checkpointIds(),
    readText: async (checkpointId, name) => {
      const text = await this.get(this.checkpointKey(checkpointId, name));
      if (text === undefined || name !== METADATA) return text;
      // The owner id is this storage's business, not part of the metadata the runtime reads.
      try {
        const { owner: _owner, ...metadata } = JSON.parse(text) as CheckpointMetadata & { owner?: string };
        return JSON.stringify(metadata);
      } catch {
        return text; // readMetadata names it as invalid JSON
      }
    },
    deleteCheckpoint: async (checkpointId) => {
      // Metadata first: a checkpoint is never seen complete with part of its state deleted.
      await this.client.send(
        new DeleteObjectCommand({ Bucket: this.bucket, Key: this.checkpointKey(checkpointId, METADATA) }),
      );
      await this.deleteUnder(this.key(`chk-${checkpointId}`, ""));
    },
  };

  listCompleted(): Promise<CheckpointMetadata[]> {
    return listCompleted(this.folders);
  }

  inspect(): Promise<InspectedCheckpoint[]> {
    return inspectFolders(this.folders);
  }

  loadLatest(): Promise<RestoredCheckpoint | undefined> {
    return loadLatest(this.folders);
  }

  load(checkpointId: number): Promise<RestoredCheckpoint | undefined> {
    return loadCheckpoint(this.folders, checkpointId);
  }

  /** The same storage under `<prefix>/<name>` (a shard's, an epoch's checkpoints), on this one's client. */
  scoped(name: string): S3CheckpointStorage {
    const scoped = new S3CheckpointStorage({
      location: `s3://${this.bucket}/${this.key(scopeName(name))}`,
      connection: this.connection,
      retained: this.retained,
    });
    scoped.s3 = this.client;
    return scoped;
  }

  async scopes(): Promise<string[]> {
    const base = this.prefix === "" ? "" : `${this.prefix}/`;
    const names: string[] = [];
    for await (const page of this.list(base, "/")) {
      for (const common of page.CommonPrefixes ?? []) {
        const name = (common.Prefix ?? "").slice(base.length).replace(/\/$/, "");
        if (!CHECKPOINT_PREFIX.test(`${name}/`) && name !== "logs" && !name.startsWith("_")) names.push(name);
      }
    }
    return names;
  }

  async removeScope(name: string): Promise<void> {
    await this.deleteUnder(`${this.key(scopeName(name))}/`);
  }

  /** A conditional record `_<name>.json` beside the checkpoints (a shard's lease and head). */
  record<T>(name: string): ConditionalRecord<T> {
    return new S3ConditionalRecord<T>({
      bucket: this.bucket,
      key: this.key(`_${scopeName(name)}.json`),
      client: this.client,
    });
  }

  logStore(namespace: string): LogStore {
    return new S3LogStore(this, this.key("logs", encodeURIComponent(namespace)));
  }

  /** For the log store: the calls it needs, on this storage's client and bucket. */
  async putObject(key: string, body: Buffer): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body }));
  }

  async getObject(key: string): Promise<string | undefined> {
    return this.get(key);
  }

  async listKeys(prefix: string, delimiter?: string): Promise<{ keys: string[]; prefixes: string[] }> {
    const keys: string[] = [];
    const prefixes: string[] = [];
    for await (const page of this.list(prefix, delimiter)) {
      for (const o of page.Contents ?? []) if (o.Key) keys.push(o.Key);
      for (const p of page.CommonPrefixes ?? []) if (p.Prefix) prefixes.push(p.Prefix);
    }
    return { keys, prefixes };
  }

  async deletePrefix(prefix: string): Promise<void> {
    await this.deleteUnder(prefix);
  }
}

/**
 * A write-ahead log on S3, which cannot append to an object: appended lines gather in
 * memory and go up as numbered segment objects (`<name>/<segment>`) of up to 8 MiB and at
 * every sync; reading lists the segments in order. The memory this takes is bounded by a
 * segment, not by the checkpoint.
 */
class S3LogStore implements LogStore {
  private readonly storage: S3CheckpointStorage;
  private readonly base: string;
  private readonly buffers = new Map<string, { chunks: string[]; bytes: number; segment: number }>();

  constructor(storage: S3CheckpointStorage, base: string) {
    this.storage = storage;
    this.base = base;
  }

  /** The location whose logs these are. */
  get where(): S3Location {
    return this.storage.where;
  }

  private nameKey(name: string): string {
    return `${this.base}/${encodeURIComponent(name)}`;
  }

  private buffer(name: string) {
    let buffer = this.buffers.get(name);
    if (!buffer) {
      buffer = { chunks: [], bytes: 0, segment: 0 };
      this.buffers.set(name, buffer);
    }
    return buffer;
  }

  async append(name: string, lines: readonly string[]): Promise<void> {
    if (lines.length === 0) return;
    const buffer = this.buffer(name);
    const text = `${lines.join("\n")}\n`;
    buffer.chunks.push(text);
    buffer.bytes += text.length;
    if (buffer.bytes >= LOG_SEGMENT_BYTES) await this.upload(name);
  }

  private async upload(name: string): Promise<void> {
    const buffer = this.buffer(name);
    if (buffer.bytes === 0) return;
    const body = Buffer.from(buffer.chunks.join(""));
    buffer.chunks = [];
    buffer.bytes = 0;
    const segment = buffer.segment++;
    await this.storage.putObject(`${this.nameKey(name)}/${String(segment).padStart(8, "0")}`, body);
  }

  async sync(name: string): Promise<void> {
    await this.upload(name);
  }

  async *read(name: string): AsyncIterable<readonly string[]> {
    const { keys } = await this.storage.listKeys(`${this.nameKey(name)}/`);
    for (const key of keys.sort()) {
      const text = await this.storage.getObject(key);
      if (!text) continue;
      const lines = text.split("\n");
      if (lines.at(-1) === "") lines.pop();
      yield lines.includes("") ? lines.filter((line) => line.length > 0) : lines;
    }
  }

  async *readBytes(name: string): AsyncIterable<Uint8Array> {
    const { keys } = await this.storage.listKeys(`${this.nameKey(name)}/`);
    for (const key of keys.sort()) {
      const text = await this.storage.getObject(key);
      if (text) yield Buffer.from(text);
    }
  }

  async delete(name: string): Promise<void> {
    this.buffers.delete(name);
    await this.storage.deletePrefix(`${this.nameKey(name)}/`);
  }

  async list(): Promise<string[]> {
    const { prefixes } = await this.storage.listKeys(`${this.base}/`, "/");
    return prefixes.map((p) => decodeURIComponent(p.slice(this.base.length + 1).replace(/\/$/, "")));
  }
}

/** A scope or record name: one key segment, never `.`, `..` or a separator. */
function scopeName(name: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name))
    throw new CheckpointStorageError(`"${name}" cannot name a folder of checkpoint storage`);
  return name;
}
