/**
 * The port to the brokers: what the Kafka sinks and source ask of a connection, in their own
 * terms, as `PostgresConnection` and `RedisConnection` are for theirs. kafkajs sits behind it
 * in `kafkajs/` (the one folder that imports kafkajs): `connectKafka` makes one from the
 * connection options. The protocol calls on a connected cluster (EndTxn,
 * InitProducerId, ListTransactions, read_committed fetches, group offsets) are functions of
 * `kafkajs/`, one file per concern, since each reaches into kafkajs internals of its own.
 *
 * Records cross the port as {@link KafkaMessage}s, the shape kafkajs sends as it is, so the
 * write path copies nothing and makes no promise per record.
 */
import type { InternalCluster } from "./kafkajs/cluster.ts";
import type { PlainProducer, TransactionalProducer } from "./kafkajs/producers.ts";

/** Record headers: each a string or bytes, or several (kafkajs's `IHeaders`). */
export interface KafkaHeaders {
  [key: string]: Buffer | string | (Buffer | string)[] | undefined;
}

/** One message as the producers send it (kafkajs's `Message`). */
export interface KafkaMessage {
  key?: Buffer | string | null;
  value: Buffer | string | null;
  partition?: number;
  headers?: KafkaHeaders;
  timestamp?: string;
}

/** A consumer group's committed offsets of some topics; `-1` where the group has none. */
export type GroupOffsets = ReadonlyArray<{
  readonly topic: string;
  readonly partitions: ReadonlyArray<{ readonly partition: number; readonly offset: string }>;
}>;

export interface KafkaConnection {
  /**
   * A new cluster on this client's brokers, not yet connected: its own connections,
   * metadata and retries. `readCommitted` for fetches that skip open and aborted transactions.
   */
  cluster(options?: { readonly readCommitted?: boolean }): InternalCluster;
  /**
   * InitProducerId on `transactionalId` (fencing whatever an earlier producer of it left open),
   * then a transaction begun on `cluster`'s connections.
   */
  beginTransaction(
    cluster: InternalCluster,
    options: { readonly transactionalId: string; readonly transactionTimeoutMs: number },
  ): Promise<TransactionalProducer>;
  /** A producer outside transactions on `cluster`'s connections; idempotent: InitProducerId first. */
  plainProducer(cluster: InternalCluster, options: { readonly idempotent: boolean }): Promise<PlainProducer>;
  /** The smallest `transaction.max.timeout.ms` of the brokers (DescribeConfigs), or undefined if none answered it. */
  transactionMaxTimeoutMs(): Promise<number | undefined>;
  /** What `groupId` committed for `topics` (OffsetFetch). */
  groupOffsets(groupId: string, topics: readonly string[]): Promise<GroupOffsets>;
}
