import {
  type Batch,
  type CommitContext,
  ConfigurationError,
  DeliveryGuarantee,
  type LingeringContext,
  RecordWriteError,
  type RetryOptions,
  reachFault,
  type SinkCapabilities,
  type SinkContext,
  type TransactionContext,
  TransactionLostError,
  TransientError,
  TwoPhaseCommitSink,
  type TwoPhaseCommitState,
  withRetry,
} from "@exactly/core";
import type { IHeaders, Kafka, Message } from "kafkajs";
import {
  type CheckpointTiming,
  checkTransactionTimeoutAgainstBroker,
  type KafkaConnectionOptions,
  resolveClient,
  validateTransactionTimeout,
} from "./kafka-config.ts";
import { errorType, FENCED, isRetriableKafkaError } from "./kafka-errors.ts";
import { createCluster, type InternalCluster } from "./kafkajs/cluster.ts";
import {
  beginTransaction,
  createPlainProducer,
  type PlainProducer,
  type TopicMessages,
  type TransactionalProducer,
} from "./kafkajs/producers.ts";
import { endTransaction, fenceTransactionalId, listTransactions } from "./kafkajs/transactions.ts";
import { Outbox, type SendLimits, sendLimits } from "./outbox.ts";
import { claimPrefix, releasePrefix } from "./prefix-registry.ts";
import { type KafkaTransactionState, parseTransactionalId, SlotPool, transactionalIdOf } from "./transaction-ids.ts";

/** One Kafka record as the serializer makes it. */
export interface KafkaSinkMessage {
  /** Overrides the sink's `topic` for this record. */
  readonly topic?: string;
  readonly key?: Buffer | string | null;
  readonly value: Buffer | string | null;
  readonly headers?: IHeaders;
  /** Explicit partition; otherwise kafkajs's default partitioner (murmur2 of the key). */
  readonly partition?: number;
  /** Record timestamp in ms; default: the time of sending. */
  readonly timestamp?: number;
}

export interface KafkaSinkOptions<T> extends KafkaConnectionOptions {
  /** Topic of every record whose serialized message names none. */
  readonly topic?: string;
  /** Record → Kafka message. Default: strings and Buffers as they are, anything else as JSON. */
  readonly serializer?: (record: T) => KafkaSinkMessage;
  /** Default EXACTLY_ONCE. */
  readonly guarantee?: DeliveryGuarantee;
  /**
   * Transactional ids are `<prefix>-<subtask>-<slot>` (EXACTLY_ONCE, required). Must be unique
   * among every producer of the cluster: lingering-transaction cleanup aborts open
   * transactions of this prefix.
   */
  readonly transactionalIdPrefix?: string;
  /**
   * Kafka's transaction.timeout.ms for this sink's transactions (EXACTLY_ONCE, required).
   * At most the broker's transaction.max.timeout.ms, and above the time recovery can take.
   */
  readonly transactionTimeoutMs?: number;
  /**
   * The checkpoint timing the transaction timeout must exceed (interval + timeout + restart
   * delay). Default: the job's own, checked when the sink opens.
   */
  readonly checkpointTiming?: CheckpointTiming;
  /** A lower bound of the transaction timeout given directly. */
  readonly minTransactionTimeoutMs?: number;
  /** Records buffered before a send. Default 5000. */
  readonly maxBatchRecords?: number;
  /** Approximate bytes (keys + values) buffered before a send; keep it below the broker's message.max.bytes. Default 512 KiB. */
  readonly maxBatchBytes?: number;
  /** Sends awaiting the broker before a write waits (bounds memory). Default 2. */
  readonly maxInFlightSends?: number;
  /** Retries of commit and recovery on transient errors. */
  readonly commitRetry?: RetryOptions;
}

/** One transaction of the sink, as checkpointed: a Kafka transaction, or a flush window (AT_LEAST_ONCE, NONE). */
export type KafkaSinkTransaction = ({ readonly kind: "kafka" } & KafkaTransactionState) | { readonly kind: "window" };

function defaultSerializer(record: unknown): KafkaSinkMessage {
  if (typeof record === "string" || Buffer.isBuffer(record)) return { value: record };
  return { value: JSON.stringify(record) };
}

function sizeOf(value: Buffer | string | null | undefined): number {
  if (value === null || value === undefined) return 0;
  return typeof value === "string" ? value.length : value.byteLength;
}

interface LiveTransaction {
  readonly producer: TransactionalProducer | undefined;
  readonly outbox: Outbox;
}

/**
 * A Kafka sink on {@link TwoPhaseCommitSink}.
 *
 * - EXACTLY_ONCE: one Kafka transaction per checkpoint per subtask; pre-commit flushes every
 *   send, commit is EndTxn(commit) by `{transactionalId, producerId, epoch}`, so a new process
 *   commits what a crashed one pre-committed. Recovery then aborts every open transaction of
 *   this prefix that no restored state references. Ids: see transaction-ids.ts.
 * - AT_LEAST_ONCE: an idempotent producer whose sends are all acknowledged at the barrier.
 * - NONE: sends are not awaited at the barrier.
 */
export class KafkaSink<T> extends TwoPhaseCommitSink<T, KafkaSinkTransaction> {
  override readonly guarantee: DeliveryGuarantee;
  override readonly capabilities: SinkCapabilities;
  private readonly sinkOptions: KafkaSinkOptions<T>;
  private readonly serialize: (record: T) => KafkaSinkMessage;
  private readonly prefix: string | undefined;
  private readonly timeoutMs: number | undefined;
  private readonly limits: SendLimits;
  private kafka: Kafka | undefined;
  private cluster: InternalCluster | undefined;
  private producer: PlainProducer | undefined;
  private pool: SlotPool | undefined;
  private readonly live = new Map<string, LiveTransaction>();
  private window: Outbox | undefined;
  /** The subtask this sink holds its prefix for, once claimed (released by close). */
  private claimed: number | undefined;

  constructor(options: KafkaSinkOptions<T>) {
    const guarantee = options.guarantee ?? DeliveryGuarantee.EXACTLY_ONCE;
    const exactlyOnce = guarantee === DeliveryGuarantee.EXACTLY_ONCE;
    const timeoutMs = exactlyOnce ? validateTransactionTimeout(options) : undefined;
    super({
      ...(timeoutMs !== undefined ? { transactionTimeoutMs: timeoutMs } : {}),
      ...(options.commitRetry ? { commitRetry: options.commitRetry } : {}),
    });
    if (!Object.values(DeliveryGuarantee).includes(guarantee)) {
      throw new ConfigurationError("guarantee", `must be one of ${Object.values(DeliveryGuarantee).join(", ")}`);
    }
    this.guarantee = guarantee;
    this.capabilities = exactlyOnce
      ? { rescale: true, abortsLingering: true }
      : { rescale: true, abortsLingering: false };
    if (exactlyOnce) {
      const prefix = options.transactionalIdPrefix;
      if (!prefix) throw new ConfigurationError("transactionalIdPrefix", "is required for EXACTLY_ONCE");
      if (!/^[A-Za-z0-9._-]+$/.test(prefix)) {
        throw new ConfigurationError("transactionalIdPrefix", "may hold only letters, digits, '.', '_' and '-'");
      }
      this.prefix = prefix;
    }
    if (!options.client && (!options.brokers || options.brokers.length === 0)) {
      throw new ConfigurationError("brokers", "give the bootstrap servers, or a kafkajs client as `client`");
    }
    this.timeoutMs = timeoutMs;
    this.sinkOptions = options;
    this.serialize = options.serializer ?? (defaultSerializer as (record: T) => KafkaSinkMessage);
    this.limits = sendLimits(options);
  }

  private get exactlyOnce(): boolean {
    return this.guarantee === DeliveryGuarantee.EXACTLY_ONCE;
  }

  private get kafkaCluster(): InternalCluster {
    if (!this.cluster) throw new Error("sink is not open");
    return this.cluster;
  }

  // ---- lifecycle ----------------------------------------------------------------------------

  override async open(context: SinkContext): Promise<void> {
    const kafka = resolveClient(this.sinkOptions);
    this.kafka = kafka;
    if (this.exactlyOnce) {
      // The job knows its own timing: check the timeout against it unless the user gave one.
      validateTransactionTimeout({
        transactionTimeoutMs: this.timeoutMs as number,
        checkpointTiming: this.sinkOptions.checkpointTiming ?? context.checkpointTiming,
        ...(this.sinkOptions.minTransactionTimeoutMs !== undefined
          ? { minTransactionTimeoutMs: this.sinkOptions.minTransactionTimeoutMs }
          : {}),
      });
      const prefix = this.prefix as string;
      claimPrefix(prefix, context.sinkId, context.subtask);
      this.claimed = context.subtask;
      await checkTransactionTimeoutAgainstBroker(kafka, this.timeoutMs as number);
      this.cluster = createCluster(kafka);
      await this.cluster.connect();
      const referenced = (context.allRestoredStates as TwoPhaseCommitState[]).flatMap((s) =>
        [...s.pending.map((p) => p.txn), ...(s.current ? [s.current.txn] : [])]
          .map((t) => this.decodeTransaction(t))
          .flatMap((t) => (t.kind === "kafka" ? [t.transactionalId] : [])),
      );
      this.pool = new SlotPool(context.restoredCheckpointId ?? 0, referenced);
    } else {
      this.cluster = createCluster(kafka);
      await this.cluster.connect();
      this.producer = await createPlainProducer(kafka, this.cluster, {
        idempotent: this.guarantee === DeliveryGuarantee.AT_LEAST_ONCE,
      });
    }
    await super.open(context);
  }

  override async snapshotState(checkpointId: number): Promise<TwoPhaseCommitState> {
    const state = await super.snapshotState(checkpointId);
    if (this.pool) {
      const ids = [...state.pending.map((p) => p.txn), ...(state.current ? [state.current.txn] : [])]
        .map((t) => this.decodeTransaction(t))
        .flatMap((t) => (t.kind === "kafka" ? [t.transactionalId] : []));
      this.pool.snapshotTaken(checkpointId, ids);
    }
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
      await this.cluster?.disconnect().catch(() => {});
      this.producer = undefined;
      this.cluster = undefined;
      if (this.claimed !== undefined) releasePrefix(this.prefix as string, this.claimed);
      this.claimed = undefined;
    }
  }

  // ---- transactions -------------------------------------------------------------------------

  protected async beginTransaction(ctx: TransactionContext): Promise<KafkaSinkTransaction> {
    if (!this.exactlyOnce) {
      this.window ??= this.newOutbox((batch) => this.sendPlain(batch));
      return { kind: "window" };
    }
    const pool = this.pool as SlotPool;
    const prefix = this.prefix as string;
    const slot = pool.take((s) => transactionalIdOf(prefix, ctx.subtask, s));
    const transactionalId = transactionalIdOf(prefix, ctx.subtask, slot);
    let producer: TransactionalProducer;
    try {
      producer = await beginTransaction(this.kafka as Kafka, this.kafkaCluster, {
        transactionalId,
        transactionTimeoutMs: this.timeoutMs as number,
      });
    } catch (error) {
      pool.release(transactionalId);
      throw error;
    }
    this.live.set(transactionalId, {
      producer,
      outbox: this.newOutbox((batch) => producer.sendBatch(batch)),
    });
    return {
      kind: "kafka",
      transactionalId,
      producerId: producer.producerId,
      epoch: producer.epoch,
      subtask: ctx.subtask,
      slot,
    };
  }

  private newOutbox(send: (batch: TopicMessages[]) => Promise<unknown>): Outbox {
    return new Outbox(send, this.limits);
  }

  private async sendPlain(batch: TopicMessages[]): Promise<void> {
    const producer = this.producer as PlainProducer;
    // NONE: leader acknowledgement only; AT_LEAST_ONCE (idempotent) needs every in-sync replica.
    await producer.sendBatch(batch, this.guarantee === DeliveryGuarantee.NONE ? 1 : -1);
  }

  private outboxOf(txn: KafkaSinkTransaction): Outbox {
    if (txn.kind === "window") return this.window as Outbox;
    const live = this.live.get(txn.transactionalId);
    if (!live) throw new Error(`transaction ${txn.transactionalId} is not open in this process`);
    return live.outbox;
  }

  protected async write(txn: KafkaSinkTransaction, batch: Batch<T>): Promise<void> {
    const { values: records, positions } = batch;
    const outbox = this.outboxOf(txn);
    for (let i = 0; i < records.length; i++) {
      let topic: string;
      let message: Message;
      try {
        const out = this.serialize(records[i] as T);
        const target = out.topic ?? this.sinkOptions.topic;
        if (!target)
          throw new ConfigurationError("topic", "the record names no topic and the sink has no default topic");
        topic = target;
        message = { value: out.value };
        if (out.key !== undefined) message.key = out.key;
        if (out.headers !== undefined) message.headers = out.headers;
        if (out.partition !== undefined) message.partition = out.partition;
        if (out.timestamp !== undefined) message.timestamp = String(out.timestamp);
      } catch (error) {
        throw new RecordWriteError(positions[i], error);
      }
      outbox.add(topic, message, sizeOf(message.value) + sizeOf(message.key) + 64);
      if (outbox.full) await outbox.dispatch();
    }
  }

  protected async preCommit(txn: KafkaSinkTransaction): Promise<void> {
    if (txn.kind === "kafka") {
      await this.outboxOf(txn).flush();
      return;
    }
    if (this.guarantee === DeliveryGuarantee.AT_LEAST_ONCE) await this.outboxOf(txn).flush();
    else await this.outboxOf(txn).dispatch();
  }

  protected async commit(txn: KafkaSinkTransaction, checkpoint: CommitContext): Promise<void> {
    if (txn.kind === "window") return;
    // The producer has nothing left to send (pre-commit flushed it): the commit is the same
    // EndTxn a recovering process sends, so both paths decide the outcome the same way.
    this.live.delete(txn.transactionalId);
    await this.endByHandle(txn, checkpoint.checkpointId);
    // The broker has committed; the process may still die before the sink forgets the transaction.
    reachFault("mid-commit");
    this.pool?.release(txn.transactionalId);
  }

  protected override async recoverAndCommit(txn: KafkaSinkTransaction, checkpoint: CommitContext): Promise<void> {
    if (txn.kind === "window") return;
    await this.endByHandle(txn, checkpoint.checkpointId);
  }

  /**
   * EndTxn(commit) for the stored `{transactionalId, producerId, epoch}`, decided from the
   * broker's answer: success (also when it was committed before: the coordinator answers a
   * repeated commit of a completed transaction with success), retry while the coordinator is
   * busy or moving, and data loss when the epoch was bumped or the transaction aborted.
   */
  private async endByHandle(
    txn: Extract<KafkaSinkTransaction, { kind: "kafka" }>,
    checkpointId: number,
  ): Promise<void> {
    try {
      await endTransaction(this.kafkaCluster, txn, true);
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

  protected async abort(txn: KafkaSinkTransaction): Promise<void> {
    if (txn.kind === "window") {
      await this.window?.discard();
      return;
    }
    const live = this.live.get(txn.transactionalId);
    this.live.delete(txn.transactionalId);
    if (live) {
      await live.outbox.discard();
      try {
        await live.producer?.abort();
        this.pool?.release(txn.transactionalId);
        return;
      } catch {
        // The producer is discarded; the broker decides below.
      }
    }
    await this.fence(txn.transactionalId);
    this.pool?.release(txn.transactionalId);
  }

  protected override async recoverAndAbort(txn: KafkaSinkTransaction): Promise<void> {
    // The restored open transaction may since have been pre-committed for a checkpoint that
    // never completed: InitProducerId aborts it whatever state it reached.
    if (txn.kind === "kafka") await this.fence(txn.transactionalId);
  }

  /** InitProducerId on `transactionalId`: aborts what is open under it; retried while it completes. */
  private async fence(transactionalId: string): Promise<number> {
    const handle = await withRetry(
      async () => {
        try {
          return await fenceTransactionalId(this.kafkaCluster, transactionalId, this.timeoutMs as number);
        } catch (error) {
          if (isRetriableKafkaError(error))
            throw new TransientError(`InitProducerId for ${transactionalId}`, { cause: error });
          throw error;
        }
      },
      (e) => e instanceof TransientError,
      { maxAttempts: 30, initialDelayMs: 50, maxDelayMs: 2000 },
    );
    return handle.epoch;
  }

  protected override async abortLingering(ctx: LingeringContext<KafkaSinkTransaction>): Promise<void> {
    if (!this.exactlyOnce) return;
    const prefix = this.prefix as string;
    const referenced = new Set(ctx.referenced.flatMap((t) => (t.kind === "kafka" ? [t.transactionalId] : [])));
    const listed = await listTransactions(this.kafkaCluster, ["Ongoing"]);
    const aborted: string[] = [];
    if (listed) {
      for (const txn of listed) {
        const parsed = parseTransactionalId(prefix, txn.transactionalId);
        if (!parsed || !ctx.ownsSubtaskIndex(parsed.subtask) || referenced.has(txn.transactionalId)) continue;
        await this.fence(txn.transactionalId);
        aborted.push(txn.transactionalId);
      }
    } else {
      // Brokers before Kafka 3.0 cannot list transactions: probe the slots of every owned
      // subtask index, lowest first, until an id the broker did not know (epoch 0 after
      // InitProducerId). Slots are taken lowest-first, so the ids ever used are contiguous.
      const indexes = Math.max(ctx.parallelism, ctx.previousParallelism ?? 0);
      for (let index = 0; index < indexes; index++) {
        if (!ctx.ownsSubtaskIndex(index)) continue;
        for (let slot = 0; ; slot++) {
          const id = transactionalIdOf(prefix, index, slot);
          if (referenced.has(id)) continue;
          const epoch = await this.fence(id);
          if (epoch === 0) break;
          aborted.push(id);
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

  protected override encodeTransaction(txn: KafkaSinkTransaction): unknown {
    return { ...txn };
  }

  protected override decodeTransaction(data: unknown): KafkaSinkTransaction {
    return { ...(data as KafkaSinkTransaction) };
  }

  protected override isTransient(error: unknown): boolean {
    return isRetriableKafkaError(error);
  }
}

/** A Kafka sink factory for `sinkTo`: one sink per subtask. */
export function kafkaSink<T>(options: KafkaSinkOptions<T>): () => KafkaSink<T> {
  // Validate once, at job definition, rather than in every subtask.
  new KafkaSink(options);
  return () => new KafkaSink(options);
}
