import { SinkNotOpenError } from "../errors.ts";
import { reachFault } from "../faults/fault-points.ts";
import { DeliveryGuarantee, type SinkCapabilities } from "../guarantee.ts";
import type { Batch, RecordPosition } from "../records.ts";
import type { Sink, SinkContext } from "./sink.ts";

/** One keyed write with the version that orders it. @public */
export interface Upsert<IN> {
  readonly key: string;
  readonly version: number;
  readonly record: IN;
  readonly position: RecordPosition;
}

/** Options of {@link IdempotentSink}. @public */
export interface IdempotentSinkOptions {
  /** Records buffered before a flush; every barrier flushes too. Default 1000. */
  readonly maxBufferedRecords?: number;
}

/**
 * Keyed upserts written as they come and flushed at every barrier: at-least-once delivery
 * plus an idempotent, versioned write gives the exactly-once end state. The version of a
 * write must be the same on replay (a source position, an event sequence), and the
 * external write must apply it only if it is newer than what is stored, so a replay never
 * moves a key back to an older value ("no jump back", I1 for idempotent sinks, docs/design.md §3).
 * @public
 */
export abstract class IdempotentSink<IN> implements Sink<IN> {
  readonly guarantee: DeliveryGuarantee = DeliveryGuarantee.EXACTLY_ONCE;
  readonly capabilities: SinkCapabilities = { rescale: true, upserts: true };

  private buffer: Upsert<IN>[] = [];
  private readonly maxBuffered: number;
  private ctx: SinkContext | undefined;

  constructor(options: IdempotentSinkOptions = {}) {
    this.maxBuffered = options.maxBufferedRecords ?? 1000;
  }

  // #region hooks
  protected abstract keyOf(record: IN): string;
  /** Deterministic under replay and increasing for a key along the stream. */
  protected abstract versionOf(record: IN, position: RecordPosition): number;
  /** Applies the writes, each only if its version is newer than the stored one. */
  protected abstract upsert(writes: readonly Upsert<IN>[]): Promise<void>;
  // #endregion hooks

  protected get context(): SinkContext {
    if (!this.ctx) throw new SinkNotOpenError();
    return this.ctx;
  }

  async open(context: SinkContext): Promise<void> {
    this.ctx = context;
  }

  async writeBatch(batch: Batch<IN>): Promise<void> {
    for (let i = 0; i < batch.values.length; i++) {
      const record = batch.values[i] as IN;
      const position = batch.positions[i] as RecordPosition;
      this.buffer.push({ key: this.keyOf(record), version: this.versionOf(record, position), record, position });
    }
    if (this.buffer.length >= this.maxBuffered) await this.flush();
    reachFault("mid-write");
  }

  private async flush(): Promise<void> {
    if (this.buffer.length === 0) return;
    const writes = this.buffer;
    this.buffer = [];
    await this.upsert(writes);
  }

  async snapshotState(_checkpointId: number): Promise<Record<string, never>> {
    await this.flush();
    reachFault("after-pre-commit");
    return {};
  }

  async notifyCheckpointComplete(_checkpointId: number): Promise<void> {}
  async notifyCheckpointAborted(_checkpointId: number): Promise<void> {}

  async close(): Promise<void> {
    // Unflushed writes belong to no checkpoint; the replay after restart rewrites them.
    this.buffer = [];
  }
}
