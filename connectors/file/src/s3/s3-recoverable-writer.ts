import { randomUUID } from "node:crypto";
import { access, type FileHandle, readFile, rm } from "node:fs/promises";
import { join, sep } from "node:path";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  type HeadObjectCommandOutput,
  ListObjectsV2Command,
  ListPartsCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { type CheckpointStorage, ConfigurationError, TransientError } from "@exactly/core";
import { reachFault } from "@exactly/core/faults";
import { requirePositiveInteger, writeAll } from "@exactly/core/internal";
import { UnsafeBucketPathError } from "../bucket-assigner.ts";
import { LineBuffer } from "../line-buffer.ts";
import {
  type LingeringFilter,
  type OpenPart,
  type PartDescriptor,
  PartExistsError,
  PartLostError,
  type RecoverableWriter,
} from "../recoverable-writer.ts";
import { s3LocationOf, s3LocationUrl } from "./s3-checkpoint-storage.ts";
import {
  createS3Client,
  httpStatus,
  isNoSuchBucket,
  isNotFound,
  isNotImplemented,
  isRefusedCredentials,
  isTransientS3Error,
  joinKey,
  requireSafeKeyPrefix,
  type S3ConnectionOptions,
  s3ErrorName,
} from "./s3-connection.ts";
import { S3Prefix } from "./s3-prefix.ts";
import { createSpoolDirectory, defaultSpoolRoot, openSpoolFile, RetainedParts } from "./spool.ts";

/** S3 takes parts of at least 5 MiB, except the last one. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;
/** The longest key S3 takes, in bytes. */
const MAX_KEY_BYTES = 1024;
/** S3 takes at most 10,000 parts per upload. */
export const MAX_PARTS = 10_000;
/** Object metadata key (`x-amz-meta-exactly-nonce`) that tells our published object from any other. */
export const NONCE_METADATA = "exactly-nonce";

export interface S3WriterOptions {
  /** The S3 bucket (not to be confused with a bucket assigner's bucket directories, which are key segments). */
  readonly bucket: string;
  /** Every key starts with `<prefix>/`; '' for the whole bucket. */
  readonly prefix?: string;
  readonly connection?: S3ConnectionOptions;
  /** Bytes per uploaded part, at least 5 MiB. Default 8 MiB. */
  readonly partSizeBytes?: number;
  /** Parts in flight at once per writer (one sink subtask). Memory is about partSizeBytes × this. Default 4. */
  readonly uploadConcurrency?: number;
  /**
   * Where bytes wait for their upload: a directory of ours that others cannot write to
   * (refused otherwise). Default `<os tmpdir>/exactly-s3-spool-<uid>`, made with mode 0700.
   */
  readonly spoolDirectory?: string;
}

/** What a part's checkpoint state holds to complete or abort its upload, in any later process. */
export interface MultipartUploadState {
  readonly bucket: string;
  readonly key: string;
  readonly uploadId: string;
  readonly nonce: string;
  readonly parts: readonly { readonly n: number; readonly etag: string }[];
}

/**
 * Part files on S3, which has no rename: each part is a multipart upload, created with a
 * nonce in its metadata, fed parts of `partSizeBytes` from a local spool while records flow,
 * and given its last part at pre-commit. Nothing is visible until commit completes the
 * upload; `If-None-Match: *` on the completion (where the server supports it) means an
 * existing object is never replaced. A completion that fails is settled by what the server
 * holds: the object with our length and nonce is committed, anything else is lost, loudly.
 */
export class S3RecoverableWriter implements RecoverableWriter {
  readonly bucket: string;
  readonly prefix: string;
  readonly partSizeBytes: number;
  readonly uploadConcurrency: number;
  private readonly connection: S3ConnectionOptions;
  private readonly spoolRoot: string;
  private readonly spoolConfigured: boolean;
  private spoolDir: Promise<string> | undefined;
  private s3: S3Client | undefined;
  /** Cleared when the server answers NotImplemented to a conditional completion. */
  private conditionalComplete = true;
  readonly slots: UploadSlots;
  /** Local copies of uploaded parts, until their upload is completed or aborted. */
  readonly retained: RetainedParts;
  private readonly listing: S3Prefix;
  /** The job's checkpoint location when it is in our bucket on our server: `<its prefix>/`, which no part key may start with. */
  private checkpoints: { readonly base: string; readonly url: string } | undefined;

  constructor(options: S3WriterOptions) {
    if (typeof options.bucket !== "string" || options.bucket === "") {
      throw new ConfigurationError("bucket", "an S3 bucket name is required");
    }
    this.bucket = options.bucket;
    this.prefix = requireSafeKeyPrefix(options.prefix ?? "");
    this.partSizeBytes = requirePositiveInteger("partSizeBytes", options.partSizeBytes ?? 8 * 1024 * 1024);
    if (this.partSizeBytes < MIN_PART_BYTES) {
      throw new ConfigurationError("partSizeBytes", `must be at least 5 MiB (${MIN_PART_BYTES}), S3's smallest part`);
    }
    this.uploadConcurrency = requirePositiveInteger("uploadConcurrency", options.uploadConcurrency ?? 4);
    this.connection = options.connection ?? {};
    this.spoolRoot = options.spoolDirectory ?? defaultSpoolRoot();
    this.spoolConfigured = options.spoolDirectory !== undefined;
    this.slots = new UploadSlots(this.uploadConcurrency);
    this.retained = new RetainedParts(this.spoolRoot, this.connection.endpoint, this.bucket, this.prefix, () =>
      this.spool(),
    );
    this.listing = new S3Prefix({ bucket: this.bucket, prefix: this.prefix, client: () => this.client });
  }

  /** The client, created on first use inside the subtask that uses it. */
  get client(): S3Client {
    this.s3 ??= createS3Client(this.connection);
    return this.s3;
  }

  /**
   * Lists at most one key under the prefix: a bucket that does not exist, or credentials the
   * server refuses, would otherwise surface only at the first write, and be restarted as if
   * they could pass. The refusal keeps only the server's error name and request id: the SDK's
   * error is not kept as the cause, so nothing of the request can reach a log.
   */
  async open(checkpoints?: CheckpointStorage): Promise<void> {
    this.keepOutOf(checkpoints);
    try {
      await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: this.prefix === "" ? "" : `${this.prefix}/`,
          MaxKeys: 1,
        }),
      );
    } catch (error) {
      const said = `${s3ErrorName(error) ?? "error"} ${httpStatus(error) ?? ""}`.trim();
      const request = (error as { $metadata?: { requestId?: string } }).$metadata?.requestId;
      const answer = `the server answered ${said}${request ? ` (request ${request})` : ""}`;
      if (isNoSuchBucket(error)) {
        throw new ConfigurationError(
          "bucket",
          `the S3 bucket ${JSON.stringify(this.bucket)} does not exist: ${answer}`,
        );
      }
      if (isRefusedCredentials(error)) {
        throw new ConfigurationError(
          "credentials",
          `the server refused them for listing the S3 bucket ${JSON.stringify(this.bucket)}: ${answer}`,
        );
      }
      throw error;
    }
  }

  /**
   * Keeps part keys out of the job's checkpoint location on this server and bucket (I8): its
   * `chk-<id>/` folders, write-ahead logs (`logs/`), shard folders, leases, heads and layout
   * are the runtime's, which reads whatever lies under them (a part in `logs/<sink>/<log>/`
   * would be read as log lines, one in `chk-9/` would push checkpoint ids to 9) and deletes
   * checkpoint and epoch folders it is done with, our parts with them. A prefix inside the
   * location is refused now; below ours, a part's bucket directories must not lead into it.
   */
  private keepOutOf(storage: CheckpointStorage | undefined): void {
    this.checkpoints = undefined;
    const location = s3LocationOf(storage);
    if (!location || location.bucket !== this.bucket || !sameEndpoint(location.endpoint, this.connection.endpoint))
      return;
    const url = s3LocationUrl(location);
    if (location.prefix === "" || this.prefix === location.prefix || this.prefix.startsWith(`${location.prefix}/`)) {
      throw new ConfigurationError(
        "prefix",
        `${JSON.stringify(this.prefix)} puts the sink's parts inside the job's checkpoint location ${url}: its objects (checkpoints, write-ahead logs, shard leases and heads) are the runtime's, which reads what lies among them and deletes folders it is done with; give the sink a prefix outside it`,
      );
    }
    this.checkpoints = { base: `${location.prefix}/`, url };
  }

  spool(): Promise<string> {
    this.spoolDir ??= createSpoolDirectory(this.spoolRoot, { configured: this.spoolConfigured });
    return this.spoolDir;
  }

  isTransient(error: unknown): boolean {
    return isTransientS3Error(error);
  }

  /** `<prefix>/<bucket directories>/<name>`; bucket directories were validated by the rolling sink. */
  keyOf(part: Pick<PartDescriptor, "bucket" | "name">): string {
    return joinKey(this.prefix, ...part.bucket.split(sep).filter((s) => s !== ""), part.name);
  }

  async openPart(part: PartDescriptor): Promise<OpenPart> {
    const key = this.keyOf(part);
    // S3 takes keys of up to 1024 bytes; a longer one would fail at the upload without naming the record.
    if (Buffer.byteLength(key) > MAX_KEY_BYTES) {
      throw new UnsafeBucketPathError(part.bucket, `makes the key longer than S3's ${MAX_KEY_BYTES} bytes`);
    }
    if (this.checkpoints && key.startsWith(this.checkpoints.base)) {
      throw new UnsafeBucketPathError(
        part.bucket,
        `puts the part inside the job's checkpoint location ${this.checkpoints.url}`,
      );
    }
    // A visible part (at-least-once) must never replace output a crashed run published.
    if (part.visible && (await this.head(this.bucket, key))) {
      throw new PartExistsError(`s3://${this.bucket}/${key}`, "an object of that name exists");
    }
    const nonce = randomUUID();
    const created = await this.client.send(
      new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, Metadata: { [NONCE_METADATA]: nonce } }),
    );
    if (!created.UploadId) throw new Error(`CreateMultipartUpload for ${key} returned no upload id`);
    const upload = { bucket: this.bucket, key, uploadId: created.UploadId, nonce };
    await this.retained.record(upload);
    // The SDK sent the create again after an answer it never got (a cut connection): each
    // earlier try may have opened an upload under this key that nobody knows of, and a job
    // that goes on without failing has no recovery to find it. The key is new to this run.
    if ((created.$metadata.attempts ?? 1) > 1) await this.abortUnknownUploadsOf(upload);
    return new S3OpenPart(this, part, upload, await this.spool());
  }

  /** Aborts every open upload of `upload`'s key but `upload` itself. */
  private async abortUnknownUploadsOf(upload: Pick<MultipartUploadState, "key" | "uploadId">): Promise<void> {
    for await (const open of this.listing.openUploads()) {
      if (open.key === upload.key && open.uploadId !== upload.uploadId) {
        await this.abortUploadOnly({ bucket: this.bucket, key: open.key, uploadId: open.uploadId });
      }
    }
  }

  /** Uploads one spooled part; returns its ETag. The bytes are read whole so the SDK can retry. */
  async uploadPart(
    upload: Pick<MultipartUploadState, "bucket" | "key" | "uploadId">,
    n: number,
    path: string,
  ): Promise<string> {
    const body = await readFile(path);
    const result = await this.client.send(
      new UploadPartCommand({
        Bucket: upload.bucket,
        Key: upload.key,
        UploadId: upload.uploadId,
        PartNumber: n,
        Body: body,
        ContentLength: body.length,
      }),
    );
    if (!result.ETag) throw new Error(`UploadPart ${n} of ${upload.key} returned no ETag`);
    return result.ETag;
  }

  async commit(part: PartDescriptor): Promise<void> {
    if (part.visible) return; // completed when it was closed
    await this.complete(part);
  }

  async recoverAndCommit(part: PartDescriptor): Promise<void> {
    // The state lists exactly the parts pre-commit uploaded: bytes after it were never in an upload's part list.
    if (part.visible) return;
    await this.complete(part);
  }

  /**
   * Completes a closed part's upload, settling a failure from what the server holds. Once
   * it is published, the local copies of its parts go.
   */
  async complete(part: PartDescriptor, republished = false): Promise<void> {
    const upload = uploadOf(part);
    const conditional = this.conditionalComplete;
    try {
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: upload.bucket,
          Key: upload.key,
          UploadId: upload.uploadId,
          MultipartUpload: { Parts: upload.parts.map((p) => ({ PartNumber: p.n, ETag: p.etag })) },
          ...(conditional ? { IfNoneMatch: "*" } : {}),
        }),
      );
    } catch (error) {
      if (conditional && isNotImplemented(error)) {
        // The server cannot promise "never overwrite"; our names are unique per checkpoint, so go on without.
        this.conditionalComplete = false;
        return this.complete(part, republished);
      }
      const settled = await this.settle(part, upload, error, republished);
      if (settled === "published again") return; // by a completion of its own, which did what follows
    }
    await this.retained.release(
      upload.uploadId,
      upload.parts.map((p) => p.n),
    );
    // One part of the transaction is published, the rest may not be: a crash here must be harmless.
    reachFault("mid-commit");
  }

  /**
   * After a failed completion, the object decides: ours (length and nonce match) means an
   * earlier completion went through; another object, or none while the upload is gone, is
   * a lost part. A failure that leaves the question open (server unreachable) is rethrown
   * for the commit retry. A part whose upload is gone, or open without its parts, is published
   * again under a new upload from the local copies, when this machine still has them.
   */
  private async settle(
    part: PartDescriptor,
    upload: MultipartUploadState,
    error: unknown,
    republished: boolean,
  ): Promise<"published" | "published again"> {
    let head: HeadObjectCommandOutput | undefined;
    try {
      head = await this.head(upload.bucket, upload.key);
    } catch (headError) {
      if (isTransientS3Error(headError)) throw error;
      throw headError;
    }
    const said = s3ErrorName(error) ?? String(error);
    if (head) {
      if (head.ContentLength === part.length && head.Metadata?.[NONCE_METADATA] === upload.nonce) return "published";
      throw new PartLostError(
        part,
        `cannot be published: s3://${upload.bucket}/${upload.key} holds another object ` +
          `(${head.ContentLength} bytes, nonce ${head.Metadata?.[NONCE_METADATA] ?? "none"}; ours ${part.length}, ${upload.nonce}); the server answered ${said}`,
      );
    }
    // No object. Lost only if the server says the upload is gone: some answer a completion of
    // an aborted upload with NoSuchUpload, others with a 500 or a page that is not XML (moto).
    const held = s3ErrorName(error) === "NoSuchUpload" ? false : await this.partsHeld(upload);
    if (held === undefined || (held !== false && holdsEvery(held, upload.parts))) {
      // No object yet, the upload and its parts still there (or the server cannot say now):
      // completing again may go through. The commit retry asks again.
      throw new TransientError(
        `completing s3://${upload.bucket}/${upload.key} failed with ${said}; no object is there yet and its upload ${upload.uploadId} is open`,
        { cause: error },
      );
    }
    // No object, and the upload gone or open without parts the state lists. MinIO leaves
    // either when a client dies during its completion: it removes the parts' metadata, moves
    // their data under the key, and only then writes the object, so the object never appears.
    // A completion under way elsewhere (a killed process's request the server still carries
    // out) looks the same until it is done: give it a moment. Then publish the part again
    // under a new upload from the local copies. Never into the old upload: MinIO has its data
    // under the key already, and completing it once more answers XMinioObjectExistsAsDirectory
    // for good, while a new upload of the key completes.
    if (await this.appearsWithin(upload, part, SETTLE_WAIT_MS)) return "published";
    const unrecoverable = republished
      ? "it was published again under a new upload once already"
      : await this.publishAgain(part, upload);
    if (unrecoverable === undefined) return "published again";
    const left =
      held === false
        ? `its upload ${upload.uploadId} is gone`
        : `its open upload ${upload.uploadId} lacks parts the checkpoint lists (the state lists ` +
          `${upload.parts.map((p) => `${p.n}:${p.etag}`).join(" ")}; the server holds ` +
          `${[...held].map(([n, etag]) => `${n}:${etag}`).join(" ") || "none"})`;
    throw new PartLostError(
      part,
      `was never published: s3://${upload.bucket}/${upload.key} does not exist, ${left}, ` +
        `and ${unrecoverable} (completing it failed with ${said})`,
    );
  }

  /**
   * Publishes a part whose upload the server lost (gone, or open without its parts), under a
   * new upload of the same key and nonce, from the local copies (each checked against the
   * ETag the checkpoint lists). Every open upload of the key is aborted first, the lost one
   * included: the state names only the lost upload, so nothing else would clean the others up. Undefined
   * when it is published, else why it cannot be.
   */
  private async publishAgain(part: PartDescriptor, lost: MultipartUploadState): Promise<string | undefined> {
    await this.spool(); // the copies are read only from a root that passed its checks
    for (const p of lost.parts) {
      if (!(await exists(this.retained.pathOf(lost.uploadId, p.n)))) {
        return `this machine has no copy of part ${p.n} to publish it again`;
      }
    }
    for await (const open of this.listing.openUploads()) {
      if (open.key === lost.key) await this.abortUploadOnly({ bucket: lost.bucket, ...open });
    }
    const created = await this.client.send(
      new CreateMultipartUploadCommand({
        Bucket: lost.bucket,
        Key: lost.key,
        Metadata: { [NONCE_METADATA]: lost.nonce },
      }),
    );
    if (!created.UploadId) throw new Error(`CreateMultipartUpload for ${lost.key} returned no upload id`);
    const again: MultipartUploadState = { ...lost, uploadId: created.UploadId };
    await this.retained.record(again);
    for (const p of lost.parts) {
      const etag = await this.uploadPart(again, p.n, this.retained.pathOf(lost.uploadId, p.n));
      if (unquoted(etag) !== unquoted(p.etag)) {
        await this.abortUploadOnly(again);
        return `the local copy of part ${p.n} is not what the checkpoint lists (ETag ${etag}, listed ${p.etag})`;
      }
    }
    await this.complete({ ...part, recoverable: again }, true);
    await this.retained.release(lost.uploadId);
    return undefined;
  }

  /** Whether our object (length and nonce) appears within `ms`. */
  private async appearsWithin(upload: MultipartUploadState, part: PartDescriptor, ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      const head = await this.head(upload.bucket, upload.key);
      if (head) return head.ContentLength === part.length && head.Metadata?.[NONCE_METADATA] === upload.nonce;
    }
    return false;
  }

  /**
   * The parts the server holds for an upload (number → ETag, every page), false when it says
   * the upload is gone (ListParts answers NoSuchUpload), undefined when it cannot tell now.
   */
  private async partsHeld(
    upload: Pick<MultipartUploadState, "bucket" | "key" | "uploadId">,
  ): Promise<Map<number, string> | false | undefined> {
    const held = new Map<number, string>();
    try {
      let marker: string | undefined;
      do {
        const page = await this.client.send(
          new ListPartsCommand({
            Bucket: upload.bucket,
            Key: upload.key,
            UploadId: upload.uploadId,
            PartNumberMarker: marker,
          }),
        );
        for (const p of page.Parts ?? []) if (p.PartNumber !== undefined) held.set(p.PartNumber, p.ETag ?? "");
        marker = page.IsTruncated ? page.NextPartNumberMarker : undefined;
      } while (marker);
      return held;
    } catch (error) {
      if (s3ErrorName(error) === "NoSuchUpload") return false;
      if (isTransientS3Error(error)) return undefined;
      throw error;
    }
  }

  async head(bucket: string, key: string): Promise<HeadObjectCommandOutput | undefined> {
    try {
      return await this.client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async abort(part: PartDescriptor): Promise<void> {
    if (part.visible || part.recoverable === undefined) return; // published, or never closed (discard aborted it)
    await this.abortUpload(uploadOf(part));
  }

  /**
   * Aborts an upload; one already gone (aborted, completed, expired) is fine. Its local
   * copies go too. False when it was gone already.
   */
  async abortUpload(upload: Pick<MultipartUploadState, "bucket" | "key" | "uploadId">): Promise<boolean> {
    const aborted = await this.abortUploadOnly(upload);
    await this.retained.release(upload.uploadId);
    return aborted;
  }

  /** Aborts an upload on the server and keeps its local copies; one already gone is fine (false). */
  private async abortUploadOnly(upload: Pick<MultipartUploadState, "bucket" | "key" | "uploadId">): Promise<boolean> {
    try {
      await this.client.send(
        new AbortMultipartUploadCommand({ Bucket: upload.bucket, Key: upload.key, UploadId: upload.uploadId }),
      );
      return true;
    } catch (error) {
      if (s3ErrorName(error) !== "NoSuchUpload" && !isNotFound(error)) throw error;
      return false;
    }
  }

  /** This writer's open uploads under its prefix, as (bucket directory, name). */
  async *openUploads(): AsyncGenerator<{ bucket: string; name: string; key: string; uploadId: string }> {
    for await (const upload of this.listing.openUploads()) yield this.named(upload);
  }

  /** An upload's bucket directory and part name, from its key. */
  private named(upload: { key: string; uploadId: string }) {
    const segments = upload.key.slice(this.listing.base.length).split("/");
    const name = segments.pop() ?? "";
    return { bucket: segments.join(sep), name, key: upload.key, uploadId: upload.uploadId };
  }

  async abortLingering(
    partPrefix: string,
    parseSubtask: (name: string) => number | undefined,
    filter: LingeringFilter,
  ): Promise<string[]> {
    const aborted: string[] = [];
    // Copies listed first: each belongs to an upload that exists by the time of the listing.
    const copies = await this.retained.list();
    const recorded = await this.retained.recorded();
    const stillOpen = new Set<string>();
    const abortIfLingering = async (upload: { bucket: string; name: string; key: string; uploadId: string }) => {
      if (!upload.name.startsWith(partPrefix)) return;
      const subtask = parseSubtask(upload.name);
      if (subtask === undefined || !filter.ownsSubtaskIndex(subtask)) return;
      if (filter.isReferenced({ bucket: upload.bucket, name: upload.name })) return;
      const wasOpen = await this.abortUpload({ bucket: this.bucket, key: upload.key, uploadId: upload.uploadId });
      stillOpen.delete(upload.uploadId);
      if (wasOpen) aborted.push(upload.key);
      reachFault("during-lingering-abort");
    };
    for await (const upload of this.openUploads()) {
      stillOpen.add(upload.uploadId);
      await abortIfLingering(upload);
    }
    // The uploads this machine opened that the listing left out (MinIO's forgets those made
    // before a restart of the server): aborting one already gone is fine.
    for (const upload of recorded) {
      if (!stillOpen.has(upload.uploadId) && upload.key.startsWith(this.listing.base)) {
        await abortIfLingering(this.named(upload));
      }
    }
    // Copies of uploads that are gone (completed, aborted, expired), whatever process kept them;
    // each upload the listing left out is asked about on its own before its copies go.
    await this.retained.sweep(
      copies,
      stillOpen,
      async (upload) => (await this.partsHeld({ bucket: this.bucket, ...upload })) === false,
    );
    return aborted;
  }

  /** An object is never torn on S3; what a crash leaves behind are open uploads, aborted here. */
  async repairTornTails(
    partPrefix: string,
    parseSubtask: (name: string) => number | undefined,
    filter: LingeringFilter,
  ): Promise<string[]> {
    return this.abortLingering(partPrefix, parseSubtask, { ...filter, isReferenced: () => false });
  }

  /** Ends the client's sockets. */
  close(): void {
    this.s3?.destroy();
    this.s3 = undefined;
  }
}

/**
 * Whether two configurations name one server: the same endpoint, or both none (AWS). Two
 * spellings of one server ("localhost", "127.0.0.1") count as two, which only ever leaves a
 * check undone, never refuses what is allowed.
 */
export function sameEndpoint(a: string | undefined, b: string | undefined): boolean {
  return (a?.replace(/\/+$/, "") ?? "") === (b?.replace(/\/+$/, "") ?? "");
}

/** How long a recommit waits for an object whose upload lacks parts (a completion under way elsewhere). */
const SETTLE_WAIT_MS = 3000;

const unquoted = (etag: string) => etag.replace(/^"|"$/g, "");

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

function holdsEvery(held: ReadonlyMap<number, string>, parts: MultipartUploadState["parts"]): boolean {
  return parts.every((p) => held.has(p.n) && unquoted(held.get(p.n) as string) === unquoted(p.etag));
}

function uploadOf(part: PartDescriptor): MultipartUploadState {
  const upload = part.recoverable as MultipartUploadState | undefined;
  if (!upload?.uploadId || !Array.isArray(upload.parts)) {
    throw new Error(`part ${part.name} has no multipart upload in its state: it was not closed by the S3 writer`);
  }
  return upload;
}

/** Parts in flight per writer: a part waits for a slot before it is read and sent. */
export class UploadSlots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(slots: number) {
    this.free = slots;
  }

  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

/**
 * One part file being written: lines gather in a LineBuffer up to 256 KiB, go to a spool file,
 * and each spool file of `partSizeBytes` is uploaded as the next part while writing goes on.
 * A part that waits for a free upload slot holds up the writer: that is the backpressure.
 */
class S3OpenPart implements OpenPart {
  readonly descriptor: PartDescriptor;
  private readonly writer: S3RecoverableWriter;
  private readonly upload: Omit<MultipartUploadState, "parts">;
  private readonly spoolDir: string;
  private readonly lines = new LineBuffer();
  private written = 0;
  private spoolFile: { handle: FileHandle; path: string; bytes: number } | undefined;
  private nextPart = 1;
  private readonly parts: { n: number; etag: string }[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private failure: { error: unknown } | undefined;

  constructor(
    writer: S3RecoverableWriter,
    descriptor: PartDescriptor,
    upload: Omit<MultipartUploadState, "parts">,
    spoolDir: string,
  ) {
    this.writer = writer;
    this.descriptor = descriptor;
    this.upload = upload;
    this.spoolDir = spoolDir;
  }

  get length(): number {
    return this.written + this.lines.pending;
  }

  append(data: string): Promise<void> | undefined {
    return this.lines.add(data) ? this.flush() : undefined;
  }

  async flush(): Promise<void> {
    if (this.failure) throw this.failure.error;
    const data = this.lines.take();
    if (!data) return;
    if (!this.spoolFile) {
      const path = join(this.spoolDir, `${this.upload.nonce}-${this.nextPart}`);
      this.spoolFile = { handle: await openSpoolFile(path), path, bytes: 0 };
    }
    await writeAll(this.spoolFile.handle, data);
    this.spoolFile.bytes += data.length;
    this.written += data.length;
    if (this.spoolFile.bytes >= this.writer.partSizeBytes) await this.ship();
  }

  /** Closes the spool file and starts its upload once a slot is free. */
  private async ship(): Promise<void> {
    const file = this.spoolFile;
    if (!file) return;
    this.spoolFile = undefined;
    await file.handle.close();
    const n = this.nextPart++;
    if (n > MAX_PARTS)
      throw new Error(`part ${this.upload.key} needs more than ${MAX_PARTS} parts: raise partSizeBytes`);
    await this.writer.slots.acquire();
    const sending: Promise<void> = this.writer
      .uploadPart(this.upload, n, file.path)
      // Uploaded: its bytes stay on local disk until the upload is completed (RetainedParts).
      .then(async (etag) => {
        await this.writer.retained.keep(file.path, this.upload.uploadId, n);
        this.parts.push({ n, etag });
      })
      .catch(async (error: unknown) => {
        this.failure ??= { error };
        await rm(file.path, { force: true });
      })
      .finally(() => {
        this.writer.slots.release();
        this.inFlight.delete(sending);
      });
    this.inFlight.add(sending);
  }

  async closeForCommit(): Promise<PartDescriptor> {
    await this.flush();
    await this.ship(); // the last part, which may be smaller than 5 MiB
    await Promise.all(this.inFlight);
    if (this.failure) throw this.failure.error;
    const parts = [...this.parts].sort((a, b) => a.n - b.n);
    const closed: PartDescriptor = { ...this.descriptor, length: this.written, recoverable: { ...this.upload, parts } };
    // Visible (at-least-once): published now, at the barrier, as the local writer's file is.
    if (this.descriptor.visible) await this.writer.complete(closed);
    return closed;
  }

  async discard(): Promise<void> {
    this.lines.clear();
    const file = this.spoolFile;
    this.spoolFile = undefined;
    if (file) {
      await file.handle.close().catch(() => {});
      await rm(file.path, { force: true });
    }
    await Promise.allSettled(this.inFlight);
    await this.writer.abortUpload(this.upload);
  }
}
