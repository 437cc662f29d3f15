/**
 * The `KafkaConnection` port on kafkajs: one cluster (kafkajs's private cluster factory, see
 * cluster.ts) for the connection's sockets and metadata, kafkajs's public admin for the checks
 * and offsets it answers, and the other files of this folder for what kafkajs's public client
 * cannot do (producers whose id and epoch can be read, EndTxn by handle, read_committed fetches
 * with Java's aborted-transaction filter).
 */
import { ConfigurationError } from "@exactly/core";
import kafkajs, { type Kafka } from "kafkajs";
import {
  type DescribedTransaction,
  type FetchedPartition,
  type GroupOffsets,
  type KafkaConnection,
  KafkaOffsetOutOfRangeError,
  KafkaUnknownTopicsError,
  type ListedTransaction,
  type OffsetSpec,
  type PartitionFetch,
  type PlainProducer,
  type TopicPartition,
  type TransactionalProducer,
  type TransactionHandle,
} from "../kafka-connection.ts";
import { createCluster, type InternalCluster } from "./cluster.ts";
import { fetchCommitted } from "./fetch.ts";
import { commitGroupOffsets } from "./group-offsets.ts";
import { beginTransaction, createPlainProducer } from "./producers.ts";
import { describeTransaction, endTransaction, fenceTransactionalId, listTransactions } from "./transactions.ts";

/**
 * The part of a kafkajs `Kafka` client the connector calls. Pass your own client to share its
 * SSL, SASL, logging and retry settings; it must be a kafkajs 2.2.4 `Kafka` instance, since
 * the transactional paths build on its internal cluster factory (see cluster.ts).
 */
export type KafkaClient = Pick<Kafka, "producer" | "admin" | "logger">;

/** What the kafkajs adapter is made from. */
export interface KafkajsOptions {
  readonly brokers?: readonly string[];
  /** A kafkajs client to use instead of one made from `brokers`. It is never closed by the connector. */
  readonly client?: KafkaClient;
  readonly clientId?: string;
}

/** Errors whose answer says the metadata is stale: the source refreshes it and fetches again. */
const STALE_METADATA = new Set([
  "UNKNOWN_TOPIC_OR_PARTITION",
  "LEADER_NOT_AVAILABLE",
  "NOT_LEADER_FOR_PARTITION",
  "FENCED_LEADER_EPOCH",
  "UNKNOWN_LEADER_EPOCH",
]);

/** The client to use: the injected one, or one made from `brokers` (kafkajs's own logging off: errors still reject). */
function resolveClient(options: KafkajsOptions): Kafka {
  if (options.client) return options.client as Kafka;
  if (!options.brokers || options.brokers.length === 0) {
    throw new ConfigurationError("brokers", "give the bootstrap servers, or a kafkajs client as `client`");
  }
  return new kafkajs.Kafka({
    clientId: options.clientId ?? "exactly",
    brokers: [...options.brokers],
    // kafkajs logs retriable errors (CONCURRENT_TRANSACTIONS while a fenced transaction
    // aborts) at ERROR before retrying them; real failures reach the sink as rejections.
    logLevel: kafkajs.logLevel.NOTHING,
  });
}

/** A connection on kafkajs; nothing is opened until `connect`. */
export function openKafkajsConnection(
  options: KafkajsOptions,
  use: { readonly readCommitted?: boolean } = {},
): KafkaConnection {
  return new KafkajsConnection(resolveClient(options), use.readCommitted === true);
}

class KafkajsConnection implements KafkaConnection {
  private readonly kafka: Kafka;
  private readonly cluster: InternalCluster;

  constructor(kafka: Kafka, readCommitted: boolean) {
    this.kafka = kafka;
    this.cluster = createCluster(kafka, readCommitted ? { readCommitted: true } : {});
  }

  connect(): Promise<void> {
    return this.cluster.connect();
  }

  async close(): Promise<void> {
    await this.cluster.disconnect().catch(() => {});
  }

  async transactionMaxTimeoutMs(): Promise<number | undefined> {
    const admin = this.kafka.admin();
    try {
      // Inside the try: a connect that fails half way (the broker restarting) may hold a socket.
      await admin.connect();
      const { brokers } = await admin.describeCluster();
      let maximum: number | undefined;
      for (const broker of brokers) {
        const result = await admin.describeConfigs({
          includeSynonyms: false,
          resources: [
            {
              type: kafkajs.ConfigResourceTypes.BROKER,
              name: String(broker.nodeId),
              configNames: ["transaction.max.timeout.ms"],
            },
          ],
        });
        const value = result.resources[0]?.configEntries.find(
          (e) => e.configName === "transaction.max.timeout.ms",
        )?.configValue;
        const parsed = value === undefined ? Number.NaN : Number(value);
        if (Number.isFinite(parsed)) maximum = maximum === undefined ? parsed : Math.min(maximum, parsed);
      }
      return maximum;
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  async partitions(topics: readonly string[]): Promise<Map<string, number[]>> {
    try {
      await this.cluster.addMultipleTargetTopics([...topics]);
    } catch (error) {
      // kafkajs retries a metadata answer of UNKNOWN_TOPIC_OR_PARTITION (a topic just created
      // may not be in every broker's cache yet), then rejects with it: ask which are missing.
      if ((error as { type?: unknown }).type !== "UNKNOWN_TOPIC_OR_PARTITION") throw error;
      const missing = await this.missingTopics(topics);
      if (missing.length > 0) throw new KafkaUnknownTopicsError(missing, { cause: error });
      throw error;
    }
    const out = new Map<string, number[]>();
    for (const topic of topics) {
      out.set(
        topic,
        this.cluster
          .findTopicPartitionMetadata(topic)
          .map((p) => p.partitionId)
          .sort((a, b) => a - b),
      );
    }
    return out;
  }

  private async missingTopics(topics: readonly string[]): Promise<string[]> {
    const admin = this.kafka.admin();
    try {
      await admin.connect();
      const existing = new Set(await admin.listTopics());
      return topics.filter((t) => !existing.has(t));
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  beginTransaction(options: {
    readonly transactionalId: string;
    readonly transactionTimeoutMs: number;
  }): Promise<TransactionalProducer> {
    return beginTransaction(this.kafka, this.cluster, options);
  }

  plainProducer(options: { readonly idempotent: boolean }): Promise<PlainProducer> {
    return createPlainProducer(this.kafka, this.cluster, options);
  }

  endTransaction(handle: TransactionHandle, commit: boolean): Promise<void> {
    return endTransaction(this.cluster, handle, commit);
  }

  initProducerId(transactionalId: string, transactionTimeoutMs: number): Promise<TransactionHandle> {
    return fenceTransactionalId(this.cluster, transactionalId, transactionTimeoutMs);
  }

  listTransactions(states: readonly string[]): Promise<ListedTransaction[] | undefined> {
    return listTransactions(this.cluster, states);
  }

  describeTransaction(transactionalId: string): Promise<DescribedTransaction> {
    return describeTransaction(this.cluster, transactionalId);
  }

  async listOffsets(
    partitions: readonly TopicPartition[],
    at: OffsetSpec,
  ): Promise<Array<TopicPartition & { readonly offset: number }>> {
    const byTopic = new Map<string, Array<{ partition: number }>>();
    for (const { topic, partition } of partitions) {
      const list = byTopic.get(topic) ?? [];
      list.push({ partition });
      byTopic.set(topic, list);
    }
    if (byTopic.size === 0) return [];
    await this.cluster.addMultipleTargetTopics([...byTopic.keys()]);
    const where =
      at === "earliest" || at === "latest" ? { fromBeginning: at === "earliest" } : { fromTimestamp: at.timestamp };
    // The cluster reads with read_committed (the source's), so "latest" is the last stable offset.
    const result = await this.cluster.fetchTopicsOffset(
      [...byTopic].map(([topic, parts]) => ({ topic, partitions: parts, ...where })),
    );
    return result.flatMap(({ topic, partitions: parts }) =>
      parts.map(({ partition, offset }) => ({ topic, partition, offset: Number(offset) })),
    );
  }

  async fetchCommitted(request: {
    readonly maxWaitMs: number;
    readonly maxBytes: number;
    readonly partitions: readonly PartitionFetch[];
  }): Promise<FetchedPartition[]> {
    const cluster = this.cluster;
    // Metadata of topics fetched before is kept (5 minutes); a new one is loaded here.
    await cluster.addMultipleTargetTopics([...new Set(request.partitions.map((p) => p.topic))]);
    const byLeader = new Map<string, PartitionFetch[]>();
    for (const p of request.partitions) {
      const leader = Object.keys(cluster.findLeaderForPartitions(p.topic, [p.partition]))[0];
      if (leader === undefined) continue;
      const list = byLeader.get(leader) ?? [];
      list.push(p);
      byLeader.set(leader, list);
    }
    if (byLeader.size === 0) {
      await cluster.refreshMetadata();
      return [];
    }
    const results = await Promise.all(
      [...byLeader].map(async ([nodeId, partitions]) => {
        try {
          const broker = await cluster.findBroker({ nodeId });
          return await fetchCommitted(broker, {
            maxWaitTimeMs: request.maxWaitMs,
            maxBytes: request.maxBytes,
            partitions: partitions.map((p) => ({
              topic: p.topic,
              partition: p.partition,
              fetchOffset: String(p.fetchOffset),
              maxBytes: p.maxBytes,
            })),
          });
        } catch (error) {
          const type = (error as { type?: unknown }).type;
          if (type === "OFFSET_OUT_OF_RANGE") throw new KafkaOffsetOutOfRangeError(partitions, { cause: error });
          if ((typeof type === "string" && STALE_METADATA.has(type)) || (error as { retriable?: boolean }).retriable) {
            await cluster.refreshMetadata().catch(() => {});
            return [];
          }
          throw error;
        }
      }),
    );
    return results.flat();
  }

  async groupOffsets(groupId: string, topics: readonly string[]): Promise<GroupOffsets> {
    const admin = this.kafka.admin();
    try {
      // Inside the try: a connect that fails half way (the broker restarting) may hold a socket.
      await admin.connect();
      return await admin.fetchOffsets({ groupId, topics: [...topics] });
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  commitGroupOffsets(
    groupId: string,
    topics: ReadonlyArray<{ topic: string; partitions: ReadonlyArray<{ partition: number; offset: string }> }>,
  ): Promise<void> {
    return commitGroupOffsets(
      this.cluster,
      groupId,
      topics.map((t) => ({ topic: t.topic, partitions: [...t.partitions] })),
    );
  }
}
