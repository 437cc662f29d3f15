import type { DeliveryGuarantee, SinkCapabilities } from "../guarantee.ts";
import type { Batch } from "../records.ts";
import type { Sink, SinkContext } from "./sink.ts";

/**
 * A sink without transactions: records go to the external system as they come, and the
 * barrier flushes. Nothing is committed later, so the checkpointed state is empty, completion
 * and abort have nothing to do, and a restart replays from the restored source positions
 * (the duplicates of AT_LEAST_ONCE). Flink's `SinkWriter` without a committer has this shape.
 *
 * A subclass declares its guarantee (AT_LEAST_ONCE when `flush` waits for the system to
 * acknowledge everything; NONE when it only sends) and implements `open`, `writeBatch`,
 * `flush` and `close`.
 */
export abstract class FlushingSink<IN> implements Sink<IN> {
  abstract readonly guarantee: DeliveryGuarantee;
  /** No state to spread, so any parallelism restores. */
  readonly capabilities: SinkCapabilities = { rescale: true };

  // #region hooks
  abstract open(context: SinkContext): Promise<void>;
  abstract writeBatch(batch: Batch<IN>): void | Promise<void>;
  /**
   * The barrier of `checkpointId`: resolves once everything written before it is where the
   * guarantee needs it (for AT_LEAST_ONCE: acknowledged by the system, durable).
   */
  protected abstract flush(checkpointId: number): Promise<void>;
  /** Records not flushed belong to no checkpoint: the replay after a restart writes them again. */
  abstract close(): Promise<void>;
  // #endregion

  async snapshotState(checkpointId: number): Promise<Record<string, never>> {
    await this.flush(checkpointId);
    return {};
  }

  async notifyCheckpointComplete(_checkpointId: number): Promise<void> {
    // Everything was flushed at the barrier: there is nothing to commit.
  }

  async notifyCheckpointAborted(_checkpointId: number): Promise<void> {
    // The next barrier flushes what this one did not cover; nothing waits for a commit.
  }
}
