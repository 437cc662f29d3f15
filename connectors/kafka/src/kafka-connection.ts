/**
 * The port to the brokers: everything the Kafka sinks, the source and the lingering-work
 * finder ask of Kafka, in their own terms, as `PostgresConnection` and `RedisConnection` are
 * for theirs. The client sits behind it in its adapter folder (`platformatic/`, on
 * @platformatic/kafka), the only place that imports a Kafka client; `open-connection.ts` opens it. No client type crosses it:
 * records, offsets, transactions and answers are the types below.
 *
 * One `KafkaConnection` is one set of broker connections with its own metadata: a sink opens
 * one, the source one (with read_committed fetches), so a source's long-poll fetch never
 * waits in line before a sink's EndTxn on the same socket.
 *
 * Errors: a broker's refusal rejects with an error whose `type` names Kafka's error code
 * (`PRODUCER_FENCED`, `CONCURRENT_TRANSACTIONS`, …) and whose `retriable` says whether Kafka
 * counts it as one; kafka-errors.ts reads them.
 */

/** Record headers: each a string or bytes, or several. */
export interface KafkaHeaders {
  [key: string]: Buffer | string | (Buffer | string)[] | undefined;
}

/** One message as the producers send it. */
export interface KafkaMessage {
  key?: Buffer | string | null;
  value: Buffer | string | null;
  /** Set by the record writer from the key (Kafka's Java partitioner), or by the user. */
  partition?: number;
  headers?: KafkaHeaders;
  /** ms since the epoch, as a decimal string. */
  timestamp?: string;
}

/** One send's messages of one topic. */
export interface TopicMessages {
  topic: string;
  messages: KafkaMessage[];
}

/** The identity of one Kafka transaction: InitProducerId gives every transaction a fresh epoch. */
export interface TransactionHandle {
  readonly transactionalId: string;
  /** INT64, as a decimal string. */
  readonly producerId: string;
  readonly epoch: number;
}

/** A producer of exactly one transaction, begun by {@link KafkaConnection.beginTransaction}. */
export interface TransactionalProducer extends TransactionHandle {
  /**
   * Resolves once every in-sync replica holds every message (acks all). Sends land in the order
   * they were made within every partition, however many are in flight.
   */
  sendBatch(topicMessages: TopicMessages[]): Promise<void>;
  /** EndTxn(abort) through this producer. */
  abort(): Promise<void>;
}

/** A producer outside transactions, for AT_LEAST_ONCE (idempotent) and NONE. */
export interface PlainProducer {
  /** Resolves once the brokers acknowledged every message (`acks`: -1 all in-sync replicas, 1 the leader). */
  sendBatch(topicMessages: TopicMessages[], acks: -1 | 1): Promise<void>;
}

export interface ListedTransaction {
  readonly transactionalId: string;
  readonly producerId: string;
  /** Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Empty, … */
  readonly state: string;
}

export interface DescribedTransaction {
  readonly transactionalId: string;
  readonly state: string;
  readonly timeoutMs: number;
  /** ms since the epoch; -1 when no transaction is under way. */
  readonly startTimeMs: number;
  readonly producerId: string;
  readonly epoch: number;
  readonly partitions: ReadonlyArray<{ topic: string; partition: number }>;
}

export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

/** Where ListOffsets looks: the first offset, the latest (last stable), or the first at or after a time. */
export type OffsetSpec = "earliest" | "latest" | { readonly timestamp: number };

/** A committed record as fetched. Offsets and timestamps are INT64 decimal strings. */
export interface FetchedRecord {
  /** Numbers: the decoder refuses a batch whose offsets pass 2^53 − 1. */
  readonly offset: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  /** ms; -1 where the producer gave none. */
  readonly timestamp: number;
  readonly headers: KafkaHeaders;
}

export interface FetchedPartition {
  readonly topic: string;
  readonly partition: number;
  /** Committed, non-control records at or after the fetch offset (a partition the broker refused is left out). */
  readonly records: FetchedRecord[];
  /** Where the next fetch starts: past every record returned, aborted and control ones too. */
  readonly nextOffset: string | undefined;
  readonly highWatermark: string;
  /** The last stable offset: below the first record of a still-open transaction. */
  readonly lastStableOffset: string | undefined;
}

/** What one fetch asks of one partition. */
export interface PartitionFetch extends TopicPartition {
  readonly fetchOffset: number;
  readonly maxBytes: number;
}

/** A consumer group's committed offsets of some topics; `-1` where the group has none. */
export type GroupOffsets = ReadonlyArray<{
  readonly topic: string;
  readonly partitions: ReadonlyArray<{ readonly partition: number; readonly offset: string }>;
}>;

export interface KafkaConnection {
  /** Opens the broker connections; every call below needs it. */
  connect(): Promise<void>;
  /** Closes them; safe to call twice, and after a connect that failed half way. */
  close(): Promise<void>;

  // ---- brokers ------------------------------------------------------------------------------

  /** The smallest `transaction.max.timeout.ms` of the brokers (DescribeConfigs), or undefined if none answered it. */
  transactionMaxTimeoutMs(): Promise<number | undefined>;
  /**
   * Each topic's partition numbers, ascending, from fresh metadata. Rejects with
   * {@link KafkaUnknownTopicsError} naming the topics the cluster does not have.
   */
  partitions(topics: readonly string[]): Promise<Map<string, number[]>>;
  /**
   * CreateTopics for `topic` with `partitions` partitions and `configs`, unless the cluster has
   * it (another process may create it at the same time); then, from fresh metadata once every
   * partition has a leader, the topic's partition count and the values it has of the configs
   * named. `created` says whether this call made it.
   */
  ensureTopic(request: {
    readonly topic: string;
    readonly partitions: number;
    readonly configs: Readonly<Record<string, string>>;
  }): Promise<{ created: boolean; partitions: number; configs: Record<string, string | undefined> }>;
  /** DeleteRecords: each partition's records before its offset go (its log start offset moves up to it). */
  deleteRecordsBefore(topic: string, offsets: ReadonlyArray<{ partition: number; offset: number }>): Promise<void>;

  // ---- writing ------------------------------------------------------------------------------

  /**
   * InitProducerId on `transactionalId` (fencing whatever an earlier producer of it left open),
   * then a transaction begun on this connection's sockets.
   */
  beginTransaction(options: {
    readonly transactionalId: string;
    readonly transactionTimeoutMs: number;
  }): Promise<TransactionalProducer>;
  /** A producer outside transactions on this connection's sockets; idempotent: InitProducerId first. */
  plainProducer(options: { readonly idempotent: boolean }): Promise<PlainProducer>;

  // ---- transactions by their handle, without a producer -------------------------------------

  /**
   * EndTxn for exactly the transaction `handle` names, at its coordinator, without
   * InitProducerId first (which would abort it): how a new process commits what a crashed one
   * pre-committed. A repeated commit of a completed transaction succeeds.
   */
  endTransaction(handle: TransactionHandle, commit: boolean): Promise<void>;
  /**
   * InitProducerId on `transactionalId` alone: bumps its epoch, which aborts a transaction left
   * open under it and fences its producer. Epoch 0 in the answer: the broker did not know the id.
   * One attempt: CONCURRENT_TRANSACTIONS while an earlier transaction completes is the caller's to retry.
   */
  initProducerId(transactionalId: string, transactionTimeoutMs: number): Promise<TransactionHandle>;
  /** ListTransactions on every broker; undefined when some broker cannot (Kafka before 3.0). */
  listTransactions(states: readonly string[]): Promise<ListedTransaction[] | undefined>;
  /** DescribeTransactions for one id, at its coordinator. */
  describeTransaction(transactionalId: string): Promise<DescribedTransaction>;

  // ---- reading ------------------------------------------------------------------------------

  /** ListOffsets with read_committed isolation ("latest" is the last stable offset); -1 where no record is at or after a time. */
  listOffsets(
    partitions: readonly TopicPartition[],
    at: OffsetSpec,
  ): Promise<Array<TopicPartition & { readonly offset: number }>>;
  /**
   * One read_committed Fetch to each partition's leader, side by side: control records and
   * records of aborted transactions removed. A partition whose leader is unknown or moved gets
   * nothing this time (the metadata is refreshed for the next). Rejects with
   * {@link KafkaOffsetOutOfRangeError} naming the partitions of a fetch the broker refused so.
   */
  fetchCommitted(request: {
    readonly maxWaitMs: number;
    readonly maxBytes: number;
    readonly partitions: readonly PartitionFetch[];
  }): Promise<FetchedPartition[]>;
  /** What `groupId` committed for `topics` (OffsetFetch). */
  groupOffsets(groupId: string, topics: readonly string[]): Promise<GroupOffsets>;
  /** OffsetCommit without joining the group (generation -1), for lag monitoring. */
  commitGroupOffsets(
    groupId: string,
    topics: ReadonlyArray<{ topic: string; partitions: ReadonlyArray<{ partition: number; offset: string }> }>,
  ): Promise<void>;
}

/** A fetch the broker refused with OFFSET_OUT_OF_RANGE: its partitions no longer hold the offsets asked. */
export class KafkaOffsetOutOfRangeError extends Error {
  readonly type = "OFFSET_OUT_OF_RANGE";
  readonly partitions: readonly TopicPartition[];
  constructor(partitions: readonly TopicPartition[], options?: ErrorOptions) {
    super(`offset out of range on ${partitions.map((p) => `${p.topic}:${p.partition}`).join(", ")}`, options);
    this.name = "KafkaOffsetOutOfRangeError";
    this.partitions = partitions;
  }
}

/** Topics the cluster does not have (topics are never created on the fly: a missing one is a mistake to name). */
export class KafkaUnknownTopicsError extends Error {
  readonly type = "UNKNOWN_TOPIC_OR_PARTITION";
  readonly topics: readonly string[];
  constructor(topics: readonly string[], options?: ErrorOptions) {
    super(`the cluster has no topic ${topics.join(", ")}`, options);
    this.name = "KafkaUnknownTopicsError";
    this.topics = topics;
  }
}
