import {
  type Batch,
  type CommitContext,
  ConfigurationError,
  DeliveryGuarantee,
  type LingeringContext,
  type RetryOptions,
  ShardFencedError,
  type SinkCapabilities,
  SinkNotOpenError,
  type TransactionContext,
  TransactionLostError,
  TransientError,
  TwoPhaseCommitSink,
  type TwoPhaseCommitState,
} from "@exactly/core";
import { reachFault } from "@exactly/core/faults";
import { errorChain } from "@exactly/core/internal";
import { fence } from "./fencing.ts";
import type { KafkaConnection, TransactionalProducer } from "./kafka-connection.ts";
import { errorType, FENCED, isRetriableKafkaError, isTransientKafkaFailure } from "./kafka-errors.ts";
import { openKafkaConnection } from "./open-connection.ts";
import { type CheckpointTiming, type KafkaWriteOptions, validateTransactionTimeout } from "./options.ts";
import type { Outbox } from "./outbox.ts";
import { claimPrefix, releasePrefix } from "./prefix-registry.ts";
import { RecordWriter } from "./record-writer.ts";
import { checkTransactionTimeoutAgainstBroker } from "./startup-checks.ts";
import {
  type KafkaTransactionState,
  parseTransactionalId,
  SLOTS_PER_EPOCH,
  SlotPool,
  slotBaseOf,
  transactionalIdOf,
  transactionState,
} from "./transaction-ids.ts";

export interface KafkaTransactionalSinkOptions<T> extends KafkaWriteOptions<T> {
  /** This sink is EXACTLY_ONCE and nothing else; the field lets {@link kafkaSink}'s options pass as they are. */
  readonly guarantee?: typeof DeliveryGuarantee.EXACTLY_ONCE;
  /**
   * Transactional ids are `<prefix>-<subtask>-<slot>` (required). Must be unique among every
   * producer of the cluster: lingering-transaction cleanup aborts open transactions of this
   * prefix.
   */
  readonly transactionalIdPrefix?: string;
  /**
   * Kafka's transaction.timeout.ms for this sink's transactions (required). At most the
   * broker's transaction.max.timeout.ms, and above the time recovery can take.
   */
  readonly transactionTimeoutMs?: number;
  /**
   * The checkpoint timing the transaction timeout must exceed (interval + timeout + restart
   * delay). Default: the job's own, checked when the sink opens.
   */
  readonly checkpointTiming?: CheckpointTiming;
  /** A lower bound of the transaction timeout given directly. */
  readonly minTransactionTimeoutMs?: number;
  /** Retries of commit and recovery on transient errors. */
  readonly commitRetry?: RetryOptions;
}

/** A transaction begun in this process: its producer, and the sends not yet flushed into it. */
interface LiveTransaction {
  readonly producer: TransactionalProducer;
  readonly outbox: Outbox;
}

/**
 * The exactly-once Kafka sink, on {@link TwoPhaseCommitSink}: one Kafka transaction per
 * checkpoint per subtask. Pre-commit flushes every send; commit is EndTxn(commit) by
 * `{transactionalId, producerId, epoch}`, so a new process commits what a crashed one
 * pre-committed. Recovery then aborts every open transaction of this prefix that no restored
 * state references. Ids: see transaction-ids.ts.
 *
 * A transaction object is never changed once begun: what a transaction needs in this process
 * (its producer and outbox) is kept beside it, by transactional id.
 */
export class KafkaTransactionalSink<T> extends TwoPhaseCommitSink<T, KafkaTransactionState> {
  override readonly guarantee: DeliveryGuarantee = DeliveryGuarantee.EXACTLY_ONCE;
  override readonly capabilities: SinkCapabilities = { rescale: true, abortsLingering: true, fences: true };
  private readonly sinkOptions: KafkaTransactionalSinkOptions<T>;
  private readonly prefix: string;
  private readonly timeoutMs: number;
  private readonly writer: RecordWriter<T>;
  private connection: KafkaConnection | undefined;
  private pool: SlotPool | undefined;
  private readonly live = new Map<string, LiveTransaction>();
  /** The subtask this sink holds its prefix for, once claimed (released by close). */
  private claimed: number | undefined;

  constructor(options: KafkaTransactionalSinkOptions<T>) {
    const timeoutMs = validateTransactionTimeout(options);
    super({
      transactionTimeoutMs: timeoutMs,
      ...(options.commitRetry ? { commitRetry: options.commitRetry } : {}),
    });
    const prefix = options.transactionalIdPrefix;
    if (!prefix) throw new ConfigurationError("transactionalIdPrefix", "is required for EXACTLY_ONCE");
    if (!/^[A-Za-z0-9._-]+$/.test(prefix)) {
      throw new ConfigurationError("transactionalIdPrefix", "may hold only letters, digits, '.', '_' and '-'");
    }
    this.prefix = prefix;
    this.timeoutMs = timeoutMs;
    this.sinkOptions = options;
    this.writer = new RecordWriter(options);
  }

  private get kafka(): KafkaConnection {
    if (!this.connection) throw new SinkNotOpenError();
    return this.connection;
  }

  // ---- lifecycle ----------------------------------------------------------------------------

  /** Checks the timeout against the job and the broker, takes the prefix, connects, sizes the slot pool. */
  protected override async initialize(restored: LingeringContext<KafkaTransactionState>): Promise<void> {
    const connection = openKafkaConnection(this.sinkOptions, { compression: this.sinkOptions.compression });
    // The job knows its own timing: check the timeout against it unless the user gave one.
    validateTransactionTimeout({
      transactionTimeoutMs: this.timeoutMs,
      checkpointTiming: this.sinkOptions.checkpointTiming ?? this.context.checkpointTiming,
      ...(this.sinkOptions.minTransactionTimeoutMs !== undefined
        ? { minTransactionTimeoutMs: this.sinkOptions.minTransactionTimeoutMs }
        : {}),
    });
    await claimPrefix(this.prefix, restored.sinkId, restored.subtask);
    this.claimed = restored.subtask;
    await checkTransactionTimeoutAgainstBroker(connection, this.timeoutMs);
    // Kept before it connects: a connect that fails half way may hold a socket for close().
    this.connection = connection;
    await connection.connect();
    // Ids any restored state references stay busy until a checkpoint completes (see SlotPool).
    this.pool = new SlotPool(
      restored.restoredCheckpointId,
      restored.referenced.map((t) => t.transactionalId),
    );
  }

  override async snapshotState(checkpointId: number): Promise<TwoPhaseCommitState> {
    const state = await super.snapshotState(checkpointId);
    const txns = [...state.pending.map((p) => p.txn), ...(state.current ? [state.current.txn] : [])];
    this.pool?.snapshotTaken(
      checkpointId,
      txns.map((t) => this.decodeTransaction(t).transactionalId),
    );
    return state;
  }

  override async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    await super.notifyCheckpointComplete(checkpointId);
    this.pool?.checkpointCompleted(checkpointId);
  }

  override async close(): Promise<void> {
    try {
      await super.close();
    } finally {
      for (const live of this.live.values()) await live.outbox.discard();
      this.live.clear();
      await this.connection?.close();
      this.connection = undefined;
      if (this.claimed !== undefined) releasePrefix(this.prefix, this.claimed);
      this.claimed = undefined;
    }
  }

  // ---- transactions -------------------------------------------------------------------------

  protected async beginTransaction(ctx: TransactionContext): Promise<KafkaTransactionState> {
    const pool = this.pool as SlotPool;
    // In a sharded job each owner epoch has slots of its own (see SLOTS_PER_EPOCH).
    const epoch = this.context.ownership?.epoch;
    const base = slotBaseOf(epoch);
    const slot = base + pool.take((s) => transactionalIdOf(this.prefix, ctx.subtask, base + s));
    const transactionalId = transactionalIdOf(this.prefix, ctx.subtask, slot);
    if (epoch !== undefined && slot - base >= SLOTS_PER_EPOCH) {
      pool.release(transactionalId);
      throw new Error(`more than ${SLOTS_PER_EPOCH} transactions of one subtask pending at once`);
    }
    let producer: TransactionalProducer;
    try {
      producer = await this.kafka.beginTransaction({
        transactionalId,
        transactionTimeoutMs: this.timeoutMs,
      });
    } catch (error) {
      pool.release(transactionalId);
      throw error;
    }
    this.live.set(transactionalId, {
      producer,
      outbox: this.writer.outbox((batch) => producer.sendBatch(batch)),
    });
    return {
      transactionalId,
      producerId: producer.producerId,
      epoch: producer.epoch,
      subtask: ctx.subtask,
      slot,
    };
  }

  private outboxOf(txn: KafkaTransactionState): Outbox {
    const live = this.live.get(txn.transactionalId);
    if (!live) throw new Error(`transaction ${txn.transactionalId} is not open in this process`);
    return live.outbox;
  }

  protected write(txn: KafkaTransactionState, batch: Batch<T>): Promise<void> {
    const written = this.writer.write(this.outboxOf(txn), batch);
    return this.context.ownership ? written.catch((error) => this.throwFenced(txn, error)) : written;
  }

  protected async preCommit(txn: KafkaTransactionState): Promise<void> {
    try {
      await this.outboxOf(txn).flush();
    } catch (error) {
      this.throwFenced(txn, error);
    }
  }

  /**
   * In a sharded job a send the broker refuses as fenced means a newer owner's recovery ran
   * InitProducerId on this id (I9): this owner lost its shard, and the attempt fails as one
   * that did (transient; the process waits for the shard again). Anything else is rethrown.
   */
  private throwFenced(txn: KafkaTransactionState, error: unknown): never {
    const ownership = this.context.ownership;
    if (ownership && errorChain(error).some((e) => FENCED.has(errorType(e) ?? ""))) {
      throw new ShardFencedError(
        ownership.epoch,
        `Kafka transactional id ${txn.transactionalId} (producer ${txn.producerId}, epoch ${txn.epoch}) was fenced by a newer producer of the id: nothing this owner wrote on it is committed`,
      );
    }
    throw error;
  }

  protected async commit(txn: KafkaTransactionState, checkpoint: CommitContext): Promise<void> {
    // The producer has nothing left to send (pre-commit flushed it): the commit is the same
    // EndTxn a recovering process sends, so both paths decide the outcome the same way.
    this.live.delete(txn.transactionalId);
    await this.endByHandle(txn, checkpoint.checkpointId);
    // The broker has committed; the process may still die before the sink forgets the transaction.
    reachFault("mid-commit");
    this.pool?.release(txn.transactionalId);
  }

  protected override async recoverAndCommit(txn: KafkaTransactionState, checkpoint: CommitContext): Promise<void> {
    await this.endByHandle(txn, checkpoint.checkpointId);
  }

  /**
   * EndTxn(commit) for the stored `{transactionalId, producerId, epoch}`, decided from the
   * broker's answer: success (also when it was committed before: the coordinator answers a
   * repeated commit of a completed transaction with success), retry while the coordinator is
   * busy or moving, and data loss when the epoch was bumped or the transaction aborted.
   */
  private async endByHandle(txn: KafkaTransactionState, checkpointId: number): Promise<void> {
    try {
      await this.kafka.endTransaction(txn, true);
    } catch (error) {
      const type = errorType(error);
      if (type !== undefined && FENCED.has(type)) {
        throw new TransactionLostError(
          checkpointId,
          `Kafka transaction ${txn.transactionalId} (producer ${txn.producerId}, epoch ${txn.epoch}) was fenced before it was committed: ` +
            "the broker aborted it (transaction.timeout.ms passed) or another producer used the id",
          { cause: error },
        );
      }
      if (type === "INVALID_TXN_STATE") {
        throw new TransactionLostError(
          checkpointId,
          `Kafka transaction ${txn.transactionalId} (producer ${txn.producerId}, epoch ${txn.epoch}) was aborted, not committed`,
          { cause: error },
        );
      }
      if (type === "INVALID_PRODUCER_ID_MAPPING") {
        throw new TransactionLostError(
          checkpointId,
          `the broker no longer knows producer ${txn.producerId} for ${txn.transactionalId} (transactional.id.expiration.ms passed, ` +
            "or the id was re-initialised): whether the transaction was committed cannot be decided",
          { cause: error },
        );
      }
      if (isRetriableKafkaError(error))
        throw new TransientError(`EndTxn(commit) for ${txn.transactionalId}: ${(error as Error).message}`, {
          cause: error,
        });
      throw error;
    }
  }

  protected async abort(txn: KafkaTransactionState): Promise<void> {
    const live = this.live.get(txn.transactionalId);
    this.live.delete(txn.transactionalId);
    if (live) {
      await live.outbox.discard();
      try {
        await live.producer.abort();
        this.pool?.release(txn.transactionalId);
        return;
      } catch {
        // The producer is discarded; the broker decides below.
      }
    }
    await this.fence(txn.transactionalId);
    this.pool?.release(txn.transactionalId);
  }

  protected override async recoverAndAbort(txn: KafkaTransactionState): Promise<void> {
    // The restored open transaction may since have been pre-committed for a checkpoint that
    // never completed: InitProducerId aborts it whatever state it reached.
    await this.fence(txn.transactionalId);
  }

  /** InitProducerId on `transactionalId`: aborts what is open under it; retried while it completes. */
  private fence(transactionalId: string): Promise<number> {
    return fence(this.kafka, transactionalId, this.timeoutMs);
  }

  protected override async abortLingering(ctx: LingeringContext<KafkaTransactionState>): Promise<void> {
    const referenced = new Set(ctx.referenced.map((t) => t.transactionalId));
    const listed = await this.kafka.listTransactions(["Ongoing"]);
    const aborted: string[] = [];
    if (listed) {
      for (const txn of listed) {
        const parsed = parseTransactionalId(this.prefix, txn.transactionalId);
        if (!parsed || !ctx.ownsSubtaskIndex(parsed.subtask) || referenced.has(txn.transactionalId)) continue;
        await this.fence(txn.transactionalId);
        aborted.push(txn.transactionalId);
      }
    } else {
      // Brokers before Kafka 3.0 cannot list transactions: probe the slots of every owned
      // subtask index, lowest first, until an id the broker did not know (epoch 0 after
      // InitProducerId). Slots are taken lowest-first, so the ids ever used are contiguous;
      // in a sharded job, within the slots of each owner epoch up to this one.
      const indexes = Math.max(ctx.parallelism, ctx.previousParallelism ?? 0);
      const ownership = this.context.ownership;
      const bases = ownership ? [0, ...Array.from({ length: ownership.epoch }, (_v, e) => slotBaseOf(e + 1))] : [0];
      for (let index = 0; index < indexes; index++) {
        if (!ctx.ownsSubtaskIndex(index)) continue;
        for (const base of bases) {
          for (let slot = base; ; slot++) {
            const id = transactionalIdOf(this.prefix, index, slot);
            if (referenced.has(id)) continue;
            const epoch = await this.fence(id);
            if (epoch === 0) break;
            aborted.push(id);
          }
        }
      }
    }
    if (aborted.length > 0) {
      this.context.logger.info(`aborted ${aborted.length} lingering Kafka transaction(s)`, {
        sink: ctx.sinkId,
        subtask: ctx.subtask,
        transactionalIds: aborted,
      });
    }
  }

  protected override encodeTransaction(txn: KafkaTransactionState): unknown {
    return transactionState(txn);
  }

  protected override decodeTransaction(data: unknown): KafkaTransactionState {
    return transactionState(data as KafkaTransactionState);
  }

  override isTransient(error: unknown): boolean {
    return isTransientKafkaFailure(error);
  }
}
