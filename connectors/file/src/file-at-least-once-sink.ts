import {
  type Batch,
  DeliveryGuarantee,
  FlushingSink,
  type SinkCapabilities,
  type SinkContext,
  SinkNotOpenError,
} from "@exactly/core";
import { ownsSubtaskIndex } from "@exactly/core/internal";
import type { FileSinkOptions } from "./options.ts";
import type { RecoverableWriter } from "./recoverable-writer.ts";
import { RollingParts } from "./rolling-parts.ts";

/**
 * The at-least-once rolling file sink: records go straight to visible part files, handed to
 * the file system batch by batch and made durable at every barrier. Output appears at once;
 * records written after the last completed checkpoint are written again after a crash
 * (duplicates, never loss). There is no transaction, so this sink is a {@link FlushingSink}:
 * a barrier closes the open parts, completion has nothing left to do.
 */
export class FileAtLeastOnceSink<T> extends FlushingSink<T> {
  readonly guarantee: DeliveryGuarantee = DeliveryGuarantee.AT_LEAST_ONCE;
  override readonly capabilities: SinkCapabilities = {
    rescale: true,
    abortsLingering: true,
    ordered: true,
    fences: true,
  };
  private readonly writer: RecoverableWriter;
  private readonly parts: RollingParts<T>;
  private ctx: SinkContext | undefined;
  /** The checkpoint the records written now belong to, in part names. */
  private checkpointId = 1;

  constructor(options: FileSinkOptions<T>) {
    super();
    this.writer = options.writer;
    this.parts = new RollingParts(options);
  }

  private get context(): SinkContext {
    if (!this.ctx) throw new SinkNotOpenError();
    return this.ctx;
  }

  async open(context: SinkContext): Promise<void> {
    this.ctx = context;
    await this.writer.open?.(context.storage);
    this.parts.bindSink(context.sinkId);
    this.checkpointId = (context.restoredCheckpointId ?? 0) + 1;
    this.parts.startNaming();
    // Nothing is hidden to clean up; a crash mid-write can at most tear the last line.
    const repaired = await this.writer.repairTornTails(this.parts.prefix, (name) => this.parts.subtaskOf(name), {
      ownsSubtaskIndex: (index) => ownsSubtaskIndex(context.subtask, context.parallelism, index),
      isReferenced: () => false,
    });
    if (repaired.length > 0) context.logger.info(`cut torn last lines off ${repaired.length} part file(s)`);
  }

  protected async write(batch: Batch<T>): Promise<void> {
    const name = { subtask: this.context.subtask, checkpointId: this.checkpointId, visible: true };
    await this.parts.append(batch, name);
    // Output is visible as it is written: hand each batch to the file at once.
    await this.parts.flushAll();
  }

  /** The barrier: everything written so far is made durable; nothing is left to commit. */
  protected async flush(checkpointId: number): Promise<void> {
    await this.parts.closeAll();
    this.checkpointId = checkpointId + 1;
    this.parts.startNaming();
  }

  async close(): Promise<void> {
    // Visible parts keep what was written; closing the handles is all that is left.
    try {
      await this.parts.discardAll();
    } finally {
      await this.writer.close?.();
    }
  }
}

/** @deprecated Renamed {@link FileAtLeastOnceSink}, after the `<System><Way>Sink` rule. */
export const AtLeastOnceFileSink = FileAtLeastOnceSink;
/** @deprecated Renamed {@link FileAtLeastOnceSink}, after the `<System><Way>Sink` rule. */
export type AtLeastOnceFileSink<T> = FileAtLeastOnceSink<T>;
