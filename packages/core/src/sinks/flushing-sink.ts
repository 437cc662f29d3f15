import { reachFault } from "../faults/fault-points.ts";
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
 * acknowledge everything; NONE when it only sends) and implements `open`, `write`, `flush`
 * and `close`. The base passes the fault points the crash tests arm (after a batch is
 * written, and after a barrier that flushed records), as the other bases do.
 * @public
 */
export abstract class FlushingSink<IN> implements Sink<IN> {
  abstract readonly guarantee: DeliveryGuarantee;
  /** No state to spread, so any parallelism restores. */
  readonly capabilities: SinkCapabilities = { rescale: true };
  /** Records written since the last barrier: a barrier with none flushed nothing. */
  private recordsSinceBarrier = 0;

  // #region hooks
  abstract open(context: SinkContext): Promise<void>;
  /** Sends a batch on its way, or buffers it; a promise only when the caller must wait (backpressure). */
  protected abstract write(batch: Batch<IN>): void | Promise<void>;
  /**
   * The barrier of `checkpointId`: resolves once everything written before it is where the
   * guarantee needs it (for AT_LEAST_ONCE: acknowledged by the system, durable).
   */
  protected abstract flush(checkpointId: number): Promise<void>;
  /** Records not flushed belong to no checkpoint: the replay after a restart writes them again. */
  abstract close(): Promise<void>;
  // #endregion

  writeBatch(batch: Batch<IN>): void | Promise<void> {
    this.recordsSinceBarrier += batch.values.length;
    const result = this.write(batch);
    if (result) return result.then(() => reachFault("mid-write"));
    reachFault("mid-write");
  }

  async snapshotState(checkpointId: number): Promise<Record<string, never>> {
    await this.flush(checkpointId);
    // The flush lifecycle's point after the barrier's work (the suite's after-pre-commit).
    if (this.recordsSinceBarrier > 0) reachFault("after-pre-commit");
    this.recordsSinceBarrier = 0;
    return {};
  }

  async notifyCheckpointComplete(_checkpointId: number): Promise<void> {
    // Everything was flushed at the barrier: there is nothing to commit.
  }

  async notifyCheckpointAborted(_checkpointId: number): Promise<void> {
    // The next barrier flushes what this one did not cover; nothing waits for a commit.
  }
}
