import { randomBytes } from "node:crypto";
import { type Batch, ConfigurationError, ExactlyError, type RecordPosition, RecordWriteError } from "@exactly/core";
import { isAlreadyExists } from "@exactly/core/internal";
import { type BucketAssigner, requireSafePrefix, UnsafeBucketPathError, validateBucket } from "./bucket-assigner.ts";
import type { FileSinkOptions } from "./options.ts";
import { type OpenPart, type PartDescriptor, PartExistsError, type RecoverableWriter } from "./recoverable-writer.ts";
import { resolveRollingPolicy } from "./rolling-policy.ts";

/**
 * The part files a file sink subtask has open, one per bucket, rolled by size: bucket
 * assignment, encoding, naming and rolling, shared by the exactly-once and the
 * at-least-once file sinks, which differ only in when a part becomes visible.
 *
 * Part names are `<prefix>-<subtask>-<checkpoint>-<n>-<nonce><suffix>`, so recovery can tell
 * which subtask and checkpoint left a file behind. The nonce is new each time the sink opens:
 * checkpoint ids start again at 1 in a new checkpoint folder, and without it a run into an
 * output folder an earlier run used would name its parts as that run did. Names are kept in
 * the checkpoint state, so recovery publishes a part under the name it was written with.
 */
export class RollingParts<T> {
  private readonly writer: RecoverableWriter;
  private readonly configuredPrefix: string | undefined;
  private readonly suffix: string;
  private readonly bucketOf: BucketAssigner<T>;
  private readonly encode: (record: T) => string;
  private readonly maxPartBytes: number;
  private readonly open = new Map<string, OpenPart>();
  private sinkId = "";
  private nonce = "";
  private sequence = 0;

  constructor(options: FileSinkOptions<T>) {
    this.writer = options.writer;
    this.configuredPrefix = options.partPrefix === undefined ? undefined : requireSafePrefix(options.partPrefix);
    this.suffix = options.partSuffix ?? "";
    if (this.suffix.includes("/") || this.suffix.includes("\\")) {
      throw new ConfigurationError("partSuffix", "must not contain a path separator");
    }
    this.bucketOf = options.bucketAssigner ?? (() => "");
    this.encode = options.encoder ?? ((record) => JSON.stringify(record));
    this.maxPartBytes = resolveRollingPolicy(options.rollingPolicy).maxPartBytes;
  }

  /** The sink's name is known once it opens; the default prefix derives from it. */
  bindSink(sinkId: string): void {
    this.sinkId = sinkId;
    this.nonce = randomBytes(6).toString("hex");
  }

  get prefix(): string {
    return this.configuredPrefix ?? requireSafePrefix(`part-${this.sinkId}`);
  }

  /**
   * The subtask index in a part name of this sink, or undefined if the name is not ours: exactly
   * `<prefix>-<subtask>-<checkpoint>-<n>-<nonce><suffix>`, or the same without the nonce (names
   * from before it). Not just any name that starts with the prefix: a sink whose prefix extends
   * ours ("part-s-1" beside "part-s", as the default prefixes of sinks "s-1" and "s" do) has
   * names with one more field, and its uploads and in-progress files are not ours to remove.
   */
  subtaskOf(name: string): number | undefined {
    const head = `${this.prefix}-`;
    if (!name.startsWith(head) || !name.endsWith(this.suffix) || name.length < head.length + this.suffix.length)
      return undefined;
    const match = /^(\d+)-\d+-\d+(?:-[0-9a-f]{12})?$/.exec(name.slice(head.length, name.length - this.suffix.length));
    return match ? Number(match[1]) : undefined;
  }

  /** New parts from here on are named for this subtask and checkpoint, numbered from 0. */
  startNaming(): void {
    this.sequence = 0;
  }

  /**
   * Appends a batch, a line a record, to the part of each record's bucket; returns the parts
   * it closed because they reached the rolling size. A record whose bucket or encoding fails
   * is named by its source position.
   */
  async append(
    batch: Batch<T>,
    name: { subtask: number; checkpointId: number; visible: boolean },
  ): Promise<PartDescriptor[]> {
    const closed: PartDescriptor[] = [];
    const { values, positions } = batch;
    for (let i = 0; i < values.length; i++) {
      let bucket: string;
      let line: string;
      try {
        const record = values[i] as T;
        bucket = validateBucket(this.bucketOf(record));
        const encoded = this.encode(record);
        // One record, one line: a reader splitting on '\n' must see this record whole.
        if (typeof encoded !== "string" || encoded.indexOf("\n") !== -1) throw new InvalidLineError(encoded);
        line = `${encoded}\n`;
      } catch (error) {
        throw new RecordWriteError(positions[i] as RecordPosition, error);
      }
      let part = this.open.get(bucket);
      if (!part) {
        try {
          part = await this.openPart(bucket, name);
        } catch (error) {
          // The bucket's directory is not safe to write in (a symlink out of the base): the record's fault.
          if (error instanceof UnsafeBucketPathError) throw new RecordWriteError(positions[i] as RecordPosition, error);
          throw error;
        }
      }
      const flushing = part.append(line);
      if (flushing) await flushing;
      if (part.length >= this.maxPartBytes) closed.push(await this.close(bucket, part));
    }
    return closed;
  }

  private async openPart(
    bucket: string,
    { subtask, checkpointId, visible }: { subtask: number; checkpointId: number; visible: boolean },
  ): Promise<OpenPart> {
    for (;;) {
      const name = `${this.prefix}-${subtask}-${checkpointId}-${this.sequence++}-${this.nonce}${this.suffix}`;
      try {
        const part = await this.writer.openPart({ bucket, name, ...(visible ? { visible } : {}) });
        this.open.set(bucket, part);
        return part;
      } catch (error) {
        // A crashed run may have published a visible part under this name: take the next one.
        if (!(visible && (isAlreadyExists(error) || error instanceof PartExistsError))) throw error;
      }
    }
  }

  private async close(bucket: string, part: OpenPart): Promise<PartDescriptor> {
    this.open.delete(bucket);
    return part.closeForCommit();
  }

  /** Hands what is buffered in every open part to its file (not durably). */
  async flushAll(): Promise<void> {
    for (const part of this.open.values()) await part.flush();
  }

  /** Makes every open part durable and closes it: the parts a checkpoint pre-commits. */
  async closeAll(): Promise<PartDescriptor[]> {
    const closed: PartDescriptor[] = [];
    for (const [bucket, part] of [...this.open]) closed.push(await this.close(bucket, part));
    return closed;
  }

  /** Drops every open part and what was written to it; returns their descriptors. */
  async discardAll(): Promise<PartDescriptor[]> {
    const parts = [...this.open.values()];
    this.open.clear();
    for (const part of parts) await part.discard();
    return parts.map((p) => p.descriptor);
  }
}

/** An encoder's output that is not one line: not a string, or a string holding a newline. */
export class InvalidLineError extends ExactlyError {
  constructor(encoded: unknown) {
    super(
      "INVALID_LINE",
      typeof encoded === "string"
        ? "the encoder's line contains a newline, which would split the record in two"
        : `the encoder returned ${encoded === null ? "null" : typeof encoded}, not a string`,
    );
  }
}
