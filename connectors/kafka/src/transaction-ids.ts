/**
 * Transactional ids of the Kafka sink: `<prefix>-<subtask>-<slot>`, a small pool of slots per
 * subtask, with a fresh InitProducerId (a new epoch) for every transaction.
 *
 * Why a pool and not a new id per checkpoint: the transaction coordinator keeps every
 * transactional id it has seen in memory until `transactional.id.expiration.ms` (7 days by
 * default); an id per checkpoint per subtask grows that without bound (the broker OOM of
 * FLINK-34554). A pool keeps the distinct ids of a subtask at (transactions that some
 * restorable checkpoint may still reference) + 1, normally 3.
 *
 * Why this is still safe (FLINK-8132): the state stores `{transactionalId, producerId,
 * epoch}`, and every transaction begins with InitProducerId, which bumps the epoch. A
 * resumed EndTxn with a stored epoch can only reach the transaction that epoch began: if
 * the id was re-initialised since, the coordinator answers INVALID_PRODUCER_EPOCH
 * (PRODUCER_FENCED) and commits nothing.
 *
 * Why that answer is decisive: a slot is reused only once no restorable checkpoint
 * references its previous transaction (see {@link SlotPool}). So when recovery resumes a
 * transaction from the latest complete checkpoint and the epoch turns out bumped, this sink
 * did not bump it after a commit: the broker aborted it (transaction timeout) or someone
 * else fenced the id — the data is lost, and that is reported, never assumed away.
 */

/**
 * Slots each owner epoch of a sharded job has to itself (I9): the owner at epoch e takes slots
 * e·1000 … e·1000+999, so a paused old owner that begins a transaction after its successor
 * opened (InitProducerId, which no broker makes conditional on a fresh id) re-initialises only
 * ids of its own epoch, never one its successor is writing on. What it begins there is never
 * committed (the checkpoint head completes nothing of it) and is aborted when its attempt
 * fails, or by the next recovery's listing, or by the broker's transaction timeout.
 */
export const SLOTS_PER_EPOCH = 1000;

/** The first slot of an owner at `epoch`; 0 for a job that is not sharded, whose ids are as they always were. */
export function slotBaseOf(epoch: number | undefined): number {
  return epoch === undefined ? 0 : epoch * SLOTS_PER_EPOCH;
}

/** What the sink checkpoints for each transaction (JSON). */
export interface KafkaTransactionState {
  readonly transactionalId: string;
  /** INT64 as a decimal string. */
  readonly producerId: string;
  readonly epoch: number;
  /** The subtask index in the id, kept so recovery needs no parsing of restored ids. */
  readonly subtask: number;
  readonly slot: number;
}

/**
 * A transaction as the sink checkpoints and restores it: exactly these fields, so a state an
 * older version wrote (whose transactions also carried a `kind`) restores to the same shape.
 */
export function transactionState(txn: KafkaTransactionState): KafkaTransactionState {
  const { transactionalId, producerId, epoch, subtask, slot } = txn;
  return { transactionalId, producerId, epoch, subtask, slot };
}

export function transactionalIdOf(prefix: string, subtask: number, slot: number): string {
  return `${prefix}-${subtask}-${slot}`;
}

/**
 * The subtask index and slot in a transactional id of this prefix, or undefined if the id
 * is not one of this sink's. The strict `<int>-<int>` tail keeps prefix `out` from claiming
 * ids of prefix `out-2` (`out-2-0-1` has the tail `2-0-1`).
 */
export function parseTransactionalId(prefix: string, id: string): { subtask: number; slot: number } | undefined {
  if (!id.startsWith(`${prefix}-`)) return undefined;
  const match = /^(0|[1-9]\d*)-(0|[1-9]\d*)$/.exec(id.slice(prefix.length + 1));
  if (!match) return undefined;
  return { subtask: Number(match[1]), slot: Number(match[2]) };
}

/**
 * Which slots of one subtask are free. A slot is busy while a transaction on it is
 * uncommitted in this process, or while any checkpoint that might still be restored
 * (the latest complete one, and any taken after it) references a transaction on it —
 * including, until a checkpoint completes, the restored checkpoint's own references.
 */
export class SlotPool {
  private readonly live = new Set<string>();
  /** Checkpoint id → transactional ids its snapshot references. */
  private readonly snapshots = new Map<number, Set<string>>();
  private restored = new Set<string>();
  private restoredCheckpointId: number;

  constructor(restoredCheckpointId: number, restoredReferences: readonly string[]) {
    this.restoredCheckpointId = restoredCheckpointId;
    this.restored = new Set(restoredReferences);
  }

  /** The lowest slot whose id is not busy. */
  take(idOf: (slot: number) => string): number {
    for (let slot = 0; ; slot++) {
      const id = idOf(slot);
      if (!this.isBusy(id)) {
        this.live.add(id);
        return slot;
      }
    }
  }

  isBusy(id: string): boolean {
    if (this.live.has(id) || this.restored.has(id)) return true;
    for (const ids of this.snapshots.values()) if (ids.has(id)) return true;
    return false;
  }

  /** The transaction on `id` was committed or aborted here. */
  release(id: string): void {
    this.live.delete(id);
  }

  snapshotTaken(checkpointId: number, ids: readonly string[]): void {
    this.snapshots.set(checkpointId, new Set(ids));
  }

  /** Checkpoint `checkpointId` is complete: no earlier checkpoint will be restored. */
  checkpointCompleted(checkpointId: number): void {
    for (const id of [...this.snapshots.keys()]) if (id < checkpointId) this.snapshots.delete(id);
    if (checkpointId > this.restoredCheckpointId) {
      this.restored = new Set();
      this.restoredCheckpointId = checkpointId;
    }
  }

  /** Distinct slots currently busy or live (for tests and logs). */
  get size(): number {
    const all = new Set([...this.live, ...this.restored]);
    for (const ids of this.snapshots.values()) for (const id of ids) all.add(id);
    return all.size;
  }
}
