import {
  type Batch,
  ConfigurationError,
  DeliveryGuarantee,
  type LingeringContext,
  RecordWriteError,
  type SinkCapabilities,
  type TransactionContext,
  TwoPhaseCommitSink,
} from "@exactly/core";
import { isAlreadyExists } from "@exactly/core/internal";
import { type BucketAssigner, requireSafePrefix, validateBucket } from "./bucket-assigner.ts";
import type { OpenPart, PartDescriptor, RecoverableWriter } from "./recoverable-writer.ts";
import { type RollingPolicy, resolveRollingPolicy } from "./rolling-policy.ts";

export interface FileSinkOptions<T> {
  readonly writer: RecoverableWriter;
  /** Part file names start with this; unique per sink. Default: `part-<sink name>`. */
  readonly partPrefix?: string;
  /** Part file name ending, e.g. ".jsonl". Default "". */
  readonly partSuffix?: string;
  readonly bucketAssigner?: BucketAssigner<T>;
  /** Turns a record into one line (without the newline). Default JSON.stringify. */
  readonly encoder?: (record: T) => string;
  readonly rollingPolicy?: RollingPolicy;
  /**
   * EXACTLY_ONCE (default) publishes a checkpoint's parts once it is complete.
   * AT_LEAST_ONCE writes straight to visible part files and only makes them durable at the
   * barrier: output appears at once, and records written after the last completed
   * checkpoint are written again after a crash (duplicates, never loss).
   */
  readonly guarantee?: DeliveryGuarantee;
}

/** One checkpoint's transaction: the parts it wrote, closed at pre-commit. */
export interface FileTransaction {
  readonly id: number;
  readonly parts: PartDescriptor[];
}

/**
 * A rolling file sink on {@link TwoPhaseCommitSink}: each checkpoint's records go to hidden
 * in-progress part files (one per bucket, rolled by size), which are made durable at the
 * barrier and published when the checkpoint completes. Part names are
 * `<prefix>-<subtask>-<transaction>-<n><suffix>`, so recovery can tell which subtask and
 * transaction left a file behind.
 */
export class FileSink<T> extends TwoPhaseCommitSink<T, FileTransaction> {
  override readonly guarantee: DeliveryGuarantee;
  override readonly capabilities: SinkCapabilities = { rescale: true, abortsLingering: true, ordered: true };
  private readonly writer: RecoverableWriter;
  private readonly configuredPrefix: string | undefined;
  private readonly suffix: string;
  private readonly bucketOf: BucketAssigner<T>;
  private readonly encode: (record: T) => string;
  private readonly maxPartBytes: number;
  /** Open parts of the current transaction, by bucket. */
  private readonly openParts = new Map<string, OpenPart>();
  private sequence = 0;

  constructor(options: FileSinkOptions<T>) {
    super();
    this.writer = options.writer;
    this.configuredPrefix = options.partPrefix === undefined ? undefined : requireSafePrefix(options.partPrefix);
    this.suffix = options.partSuffix ?? "";
    if (this.suffix.includes("/") || this.suffix.includes("\\")) {
      throw new ConfigurationError("partSuffix", "must not contain a path separator");
    }
    this.bucketOf = options.bucketAssigner ?? (() => "");
    this.encode = options.encoder ?? ((record) => JSON.stringify(record));
    this.maxPartBytes = resolveRollingPolicy(options.rollingPolicy).maxPartBytes;
    this.guarantee = options.guarantee ?? DeliveryGuarantee.EXACTLY_ONCE;
    if (this.guarantee === DeliveryGuarantee.NONE) {
      throw new ConfigurationError("guarantee", "the file sink supports EXACTLY_ONCE and AT_LEAST_ONCE");
    }
  }

  private get prefix(): string {
    return this.configuredPrefix ?? requireSafePrefix(`part-${this.context.sinkId}`);
  }

  /** The subtask index in a part name of this sink, or undefined if the name is not ours. */
  private subtaskOf(name: string): number | undefined {
    const head = `${this.prefix}-`;
    if (!name.startsWith(head)) return undefined;
    const match = /^(\d+)-(\d+)-(\d+)/.exec(name.slice(head.length));
    return match ? Number(match[1]) : undefined;
  }

  protected beginTransaction(ctx: TransactionContext): FileTransaction {
    this.sequence = 0;
    return { id: ctx.checkpointId, parts: [] };
  }

  protected async write(txn: FileTransaction, batch: Batch<T>): Promise<void> {
    const { values: records, positions } = batch;
    for (let i = 0; i < records.length; i++) {
      let bucket: string;
      let line: string;
      try {
        const record = records[i] as T;
        bucket = validateBucket(this.bucketOf(record));
        line = `${this.encode(record)}\n`;
      } catch (error) {
        throw new RecordWriteError(positions[i], error);
      }
      const part = this.openParts.get(bucket) ?? (await this.openPart(txn, bucket));
      const flushing = part.append(line);
      if (flushing) await flushing;
      if (part.length >= this.maxPartBytes) await this.closePart(txn, bucket, part);
    }
    // At least once, output is visible as it is written: hand each batch to the file at once.
    if (this.guarantee === DeliveryGuarantee.AT_LEAST_ONCE)
      for (const part of this.openParts.values()) await part.flush();
  }

  private async openPart(txn: FileTransaction, bucket: string): Promise<OpenPart> {
    const visible = this.guarantee === DeliveryGuarantee.AT_LEAST_ONCE;
    for (;;) {
      const name = `${this.prefix}-${this.context.subtask}-${txn.id}-${this.sequence++}${this.suffix}`;
      try {
        const part = await this.writer.openPart({ bucket, name, ...(visible ? { visible } : {}) });
        this.openParts.set(bucket, part);
        return part;
      } catch (error) {
        // A crashed run may have published a visible part under this name: take the next one.
        if (!(visible && isAlreadyExists(error))) throw error;
      }
    }
  }

  private async closePart(txn: FileTransaction, bucket: string, part: OpenPart): Promise<void> {
    this.openParts.delete(bucket);
    txn.parts.push(await part.closeForCommit());
  }

  protected async preCommit(txn: FileTransaction): Promise<void> {
    for (const [bucket, part] of [...this.openParts]) await this.closePart(txn, bucket, part);
  }

  protected async commit(txn: FileTransaction): Promise<void> {
    for (const part of txn.parts) await this.writer.commit(part);
  }

  protected override async recoverAndCommit(txn: FileTransaction): Promise<void> {
    for (const part of txn.parts) await this.writer.recoverAndCommit(part);
  }

  protected async abort(txn: FileTransaction): Promise<void> {
    for (const part of this.openParts.values()) await part.discard();
    for (const part of this.openParts.values()) await this.writer.abort(part.descriptor);
    this.openParts.clear();
    for (const part of txn.parts) await this.writer.abort(part);
  }

  protected override async recoverAndAbort(txn: FileTransaction): Promise<void> {
    // A transaction open at the checkpoint has no closed parts in the state; its files are lingering.
    for (const part of txn.parts) await this.writer.abort(part);
  }

  protected override async abortLingering(ctx: LingeringContext<FileTransaction>): Promise<void> {
    if (this.guarantee === DeliveryGuarantee.AT_LEAST_ONCE) {
      // Nothing is hidden to clean up; a crash mid-write can at most tear the last line.
      const repaired = await this.writer.repairTornTails(this.prefix, (name) => this.subtaskOf(name), {
        ownsSubtaskIndex: ctx.ownsSubtaskIndex,
        isReferenced: () => false,
      });
      if (repaired.length > 0) this.context.logger.info(`cut torn last lines off ${repaired.length} part file(s)`);
      return;
    }
    const referenced = new Set(ctx.referenced.flatMap((txn) => txn.parts.map((p) => `${p.bucket}\0${p.name}`)));
    const removed = await this.writer.abortLingering(this.prefix, (name) => this.subtaskOf(name), {
      ownsSubtaskIndex: ctx.ownsSubtaskIndex,
      isReferenced: (part) => referenced.has(`${part.bucket}\0${part.name}`),
    });
    if (removed.length > 0) {
      this.context.logger.info(`removed ${removed.length} lingering in-progress file(s)`, {
        sink: ctx.sinkId,
        subtask: ctx.subtask,
      });
    }
  }
}
