/**
 * A shard's checkpoint head (docs/design.md §2, Shards; I9): the one record that says which
 * checkpoint of the shard is the latest complete one, and which epoch may move it. A new
 * owner first raises the head's epoch to its own — from then on every older owner's attempt
 * to name a checkpoint complete fails — and restores the checkpoint the head names. Writing a
 * checkpoint's metadata is not enough to complete it in a sharded job: the head must name it.
 */
import { ExactlyError } from "../errors.ts";
import { type ConditionalRecord, describeRecord, type VersionedValue } from "./conditional-record.ts";
import { requireEpoch } from "./shard-lease.ts";

/** What the head record holds. @internal */
export interface HeadState {
  /** The epoch of the newest owner; only it may move `latest`. */
  readonly epoch: number;
  /** The latest complete checkpoint, and the epoch that completed it; absent before the first. */
  readonly latest?: { readonly checkpointId: number; readonly epoch: number };
}

/** An owner whose epoch is no longer the shard's newest tried to act as its owner. @public */
export class ShardFencedError extends ExactlyError {
  readonly epoch: number;
  constructor(epoch: number, message: string) {
    super("SHARD_FENCED", `epoch ${epoch} of this shard is fenced: ${message}`);
    this.epoch = epoch;
  }
}

/** @internal */
export class CheckpointHead {
  private readonly record: ConditionalRecord<HeadState>;
  private epoch: number | undefined;
  private version: string | undefined;
  private state: HeadState | undefined;

  constructor(record: ConditionalRecord<HeadState>) {
    this.record = record;
  }

  /** The head as stored; an epoch exactly never writes is refused, naming the record (a fence must compare true numbers). */
  private async read(): Promise<VersionedValue<HeadState> | undefined> {
    const current = await this.record.read();
    if (current) {
      const where = describeRecord(this.record, "the checkpoint head");
      requireEpoch(current.value.epoch, where);
      if (current.value.latest) requireEpoch(current.value.latest.epoch, where, "latest.epoch");
    }
    return current;
  }

  /** The latest complete checkpoint as this owner last wrote or read it. */
  get latest(): HeadState["latest"] {
    return this.state?.latest;
  }

  /**
   * Makes `epoch` the head's epoch, fencing every older owner, and returns the latest complete
   * checkpoint it names. Throws {@link ShardFencedError} when a newer epoch already holds it.
   */
  async fence(epoch: number): Promise<HeadState["latest"]> {
    for (;;) {
      const current = await this.read();
      if (current && current.value.epoch > epoch)
        throw new ShardFencedError(epoch, `epoch ${current.value.epoch} holds the checkpoint head`);
      const next: HeadState = { ...current?.value, epoch };
      const version = await this.record.replace(current?.version, next);
      // Another writer moved the head between the read and the write (an older owner completing
      // a checkpoint, which is then before this fence): read it again.
      if (version === undefined) continue;
      this.epoch = epoch;
      this.version = version;
      this.state = next;
      return next.latest;
    }
  }

  /**
   * Raises the head's epoch to at least `epoch` for a rescale (shard-layout.ts), fencing every
   * owner below it, and returns the latest complete checkpoint it names. Unlike `fence`, a head
   * already at or above `epoch` is left as it is: any process may repeat this.
   */
  async raise(epoch: number): Promise<HeadState["latest"]> {
    for (;;) {
      const current = await this.read();
      if (current && current.value.epoch >= epoch) return current.value.latest;
      if ((await this.record.replace(current?.version, { ...current?.value, epoch })) !== undefined)
        return current?.value.latest;
    }
  }

  /** Names checkpoint `checkpointId` the latest complete one; throws {@link ShardFencedError} if another epoch moved the head. */
  async complete(checkpointId: number): Promise<void> {
    const epoch = this.epoch;
    if (epoch === undefined) throw new ShardFencedError(0, "the head was never fenced by this owner");
    const next: HeadState = { epoch, latest: { checkpointId, epoch } };
    const version = await this.record.replace(this.version, next);
    if (version === undefined)
      throw new ShardFencedError(epoch, `another owner took the shard before checkpoint ${checkpointId} completed`);
    this.version = version;
    this.state = next;
  }
}
