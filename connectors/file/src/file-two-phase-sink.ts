import {
  type Batch,
  checkShardHead,
  isTransientByDefault,
  type LingeringContext,
  type SinkCapabilities,
  type TransactionContext,
  TransactionLostError,
  TwoPhaseCommitSink,
  type TwoPhaseCommitSinkOptions,
} from "@exactly/core";
import type { FileSinkOptions } from "./options.ts";
import { type PartDescriptor, PartLostError, type RecoverableWriter } from "./recoverable-writer.ts";
import { RollingParts } from "./rolling-parts.ts";

export interface FileTwoPhaseSinkOptions<T> extends FileSinkOptions<T> {
  /**
   * How long the storage keeps a pre-committed part unpublished (S3: the bucket's
   * AbortIncompleteMultipartUpload rule). The sink warns when a pending commit outlives it.
   * Local disk keeps in-progress files until recovery: no timeout.
   */
  readonly transactionTimeoutMs?: number;
  readonly commitRetry?: TwoPhaseCommitSinkOptions["commitRetry"];
}

/** One checkpoint's transaction: the parts it wrote, closed at pre-commit. */
export interface FileTransaction {
  readonly id: number;
  readonly parts: PartDescriptor[];
}

/**
 * The exactly-once rolling file sink, on {@link TwoPhaseCommitSink}: each checkpoint's
 * records go to hidden in-progress part files (one per bucket, rolled by size), which are
 * made durable at the barrier and published when the checkpoint completes. Recovery
 * publishes what the checkpoint pre-committed and removes in-progress files no restored
 * state references. The writer is the port to the storage (local disk, S3).
 */
export class FileTwoPhaseSink<T> extends TwoPhaseCommitSink<T, FileTransaction> {
  override readonly capabilities: SinkCapabilities = {
    rescale: true,
    abortsLingering: true,
    ordered: true,
    fences: true,
  };
  private readonly writer: RecoverableWriter;
  private readonly parts: RollingParts<T>;

  constructor(options: FileTwoPhaseSinkOptions<T>) {
    super({
      ...(options.transactionTimeoutMs === undefined ? {} : { transactionTimeoutMs: options.transactionTimeoutMs }),
      ...(options.commitRetry === undefined ? {} : { commitRetry: options.commitRetry }),
    });
    this.writer = options.writer;
    this.parts = new RollingParts(options);
  }

  protected override async initialize(restored: LingeringContext<FileTransaction>): Promise<void> {
    await this.writer.open?.(this.context.storage);
    this.parts.bindSink(restored.sinkId);
  }

  protected beginTransaction(ctx: TransactionContext): FileTransaction {
    this.parts.startNaming();
    return { id: ctx.checkpointId, parts: [] };
  }

  protected async write(txn: FileTransaction, batch: Batch<T>): Promise<void> {
    const name = { subtask: this.context.subtask, checkpointId: txn.id, visible: false };
    txn.parts.push(...(await this.parts.append(batch, name)));
  }

  protected async preCommit(txn: FileTransaction): Promise<void> {
    txn.parts.push(...(await this.parts.closeAll()));
    // Sharded, the head is this sink's fence: an old owner's snapshot after a takeover fails
    // here, so its attempt fails and close() removes what it wrote since (I9).
    await checkShardHead(this.context);
  }

  protected async commit(txn: FileTransaction): Promise<void> {
    for (const part of txn.parts) await lostIsLoud(txn, () => this.writer.commit(part));
  }

  protected override async recoverAndCommit(txn: FileTransaction): Promise<void> {
    for (const part of txn.parts) await lostIsLoud(txn, () => this.writer.recoverAndCommit(part));
  }

  override async close(): Promise<void> {
    try {
      await super.close();
    } finally {
      await this.writer.close?.();
    }
  }

  override isTransient(error: unknown): boolean {
    return this.writer.isTransient ? this.writer.isTransient(error) : isTransientByDefault(error);
  }

  protected async abort(txn: FileTransaction): Promise<void> {
    for (const part of await this.parts.discardAll()) await this.writer.abort(part);
    for (const part of txn.parts) await this.writer.abort(part);
  }

  protected override async recoverAndAbort(txn: FileTransaction): Promise<void> {
    // A transaction open at the checkpoint has no closed parts in the state; its files are lingering.
    for (const part of txn.parts) await this.writer.abort(part);
  }

  protected override async abortLingering(restored: LingeringContext<FileTransaction>): Promise<void> {
    const referenced = new Set(restored.referenced.flatMap((txn) => txn.parts.map((p) => `${p.bucket}\0${p.name}`)));
    const removed = await this.writer.abortLingering(this.parts.prefix, (name) => this.parts.subtaskOf(name), {
      ownsSubtaskIndex: restored.ownsSubtaskIndex,
      isReferenced: (part) => referenced.has(`${part.bucket}\0${part.name}`),
    });
    if (removed.length > 0) {
      this.context.logger.info(`removed ${removed.length} lingering in-progress file(s)`, {
        sink: restored.sinkId,
        subtask: restored.subtask,
      });
    }
  }
}

/** A part the storage no longer holds is a lost transaction: never retried, never silent. */
async function lostIsLoud(txn: FileTransaction, publish: () => Promise<void>): Promise<void> {
  try {
    await publish();
  } catch (error) {
    if (error instanceof PartLostError) throw new TransactionLostError(txn.id, error.message, { cause: error });
    throw error;
  }
}

/** @deprecated Renamed {@link FileTwoPhaseSink}, after the `<System><Way>Sink` rule. */
export const FileSink = FileTwoPhaseSink;
/** @deprecated Renamed {@link FileTwoPhaseSink}, after the `<System><Way>Sink` rule. */
export type FileSink<T> = FileTwoPhaseSink<T>;
/** @deprecated Renamed {@link FileTwoPhaseSinkOptions}. */
export type ExactlyOnceFileSinkOptions<T> = FileTwoPhaseSinkOptions<T>;
