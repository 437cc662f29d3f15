/**
 * The `KafkaConnection` port on @platformatic/kafka, through its public exports only: one
 * `Admin` client is the connection (its metadata, its pool of one authenticated socket per
 * broker), its admin calls answer offsets and configs, and the protocol's own API functions,
 * sent on the pool's sockets, do what no client method does: InitProducerId and EndTxn by a
 * stored handle (a restarted process commits what a crashed one pre-committed), and
 * ListTransactions / DescribeTransactions.
 */
import {
  Admin,
  ConfigResourceTypes,
  type Connection,
  describeTransactionsV0,
  endTxnV3,
  FetchIsolationLevels,
  FindCoordinatorKeyTypes,
  initProducerIdV4,
  ListOffsetTimestamps,
  listTransactionsV0,
} from "@platformatic/kafka";
import {
  type DescribedTransaction,
  type FetchedPartition,
  type GroupOffsets,
  type KafkaConnection,
  KafkaUnknownTopicsError,
  type ListedTransaction,
  type OffsetSpec,
  type PartitionFetch,
  type PlainProducer,
  type TopicPartition,
  type TransactionalProducer,
  type TransactionHandle,
} from "../kafka-connection.ts";
import { inPortTerms, KafkaProtocolError } from "./errors.ts";

/** What the adapter is made from. */
export interface PlatformaticOptions {
  readonly brokers?: readonly string[];
  readonly clientId?: string;
}

export function openPlatformaticConnection(
  options: PlatformaticOptions,
  use: { readonly readCommitted?: boolean } = {},
): KafkaConnection {
  return new PlatformaticConnection(options, use.readCommitted === true);
}

class PlatformaticConnection implements KafkaConnection {
  private readonly admin: Admin;
  private readonly readCommitted: boolean;

  constructor(options: PlatformaticOptions, readCommitted: boolean) {
    this.admin = new Admin({
      clientId: options.clientId ?? "exactly",
      bootstrapBrokers: [...(options.brokers ?? [])],
      // Metadata is kept as long as kafkajs's producers keep it (5 minutes); a moved leader is
      // learnt from the errors.
      metadataMaxAge: 300_000,
    });
    this.readCommitted = readCommitted;
  }

  async connect(): Promise<void> {
    await inPortTerms("connecting", () => this.admin.metadata({ topics: [] }));
  }

  async close(): Promise<void> {
    await this.admin.close().catch(() => {});
  }

  async transactionMaxTimeoutMs(): Promise<number | undefined> {
    const metadata = await inPortTerms("Metadata", () => this.admin.metadata({ topics: [], forceUpdate: true }));
    let maximum: number | undefined;
    for (const nodeId of metadata.brokers.keys()) {
      const [described] = await inPortTerms("DescribeConfigs", () =>
        this.admin.describeConfigs({
          resources: [
            {
              resourceType: ConfigResourceTypes.BROKER,
              resourceName: String(nodeId),
              configurationKeys: ["transaction.max.timeout.ms"],
            },
          ],
        }),
      );
      const value = described?.configs.find((c) => c.name === "transaction.max.timeout.ms")?.value;
      const parsed = value === undefined || value === null ? Number.NaN : Number(value);
      if (Number.isFinite(parsed)) maximum = maximum === undefined ? parsed : Math.min(maximum, parsed);
    }
    return maximum;
  }

  async partitions(topics: readonly string[]): Promise<Map<string, number[]>> {
    const existing = new Set(await inPortTerms("Metadata", () => this.admin.listTopics({ includeInternals: false })));
    const missing = topics.filter((t) => !existing.has(t));
    if (missing.length > 0) throw new KafkaUnknownTopicsError(missing);
    const metadata = await inPortTerms("Metadata", () =>
      this.admin.metadata({ topics: [...topics], forceUpdate: true }),
    );
    const out = new Map<string, number[]>();
    for (const topic of topics) {
      const count = metadata.topics.get(topic)?.partitionsCount ?? 0;
      out.set(
        topic,
        Array.from({ length: count }, (_v, i) => i),
      );
    }
    return out;
  }

  beginTransaction(_options: {
    readonly transactionalId: string;
    readonly transactionTimeoutMs: number;
  }): Promise<TransactionalProducer> {
    return Promise.reject(new Error("the @platformatic/kafka adapter does not produce yet"));
  }

  plainProducer(_options: { readonly idempotent: boolean }): Promise<PlainProducer> {
    return Promise.reject(new Error("the @platformatic/kafka adapter does not produce yet"));
  }

  /** A socket to the transaction coordinator of `transactionalId` (FindCoordinator each time: it moves). */
  private async transactionCoordinator(transactionalId: string): Promise<Connection> {
    const [coordinator] = await inPortTerms("FindCoordinator", () =>
      this.admin.findCoordinator({ keyType: FindCoordinatorKeyTypes.TRANSACTION, keys: [transactionalId] }),
    );
    if (!coordinator)
      throw new KafkaProtocolError("COORDINATOR_NOT_AVAILABLE", true, `no coordinator for ${transactionalId}`);
    return inPortTerms("connecting to the coordinator", () =>
      this.admin.connections.get({ host: coordinator.host, port: coordinator.port }),
    );
  }

  async endTransaction(handle: TransactionHandle, commit: boolean): Promise<void> {
    const coordinator = await this.transactionCoordinator(handle.transactionalId);
    await inPortTerms(`EndTxn(${commit ? "commit" : "abort"}) for ${handle.transactionalId}`, () =>
      endTxnV3.api.async(coordinator, handle.transactionalId, BigInt(handle.producerId), handle.epoch, commit),
    );
  }

  async initProducerId(transactionalId: string, transactionTimeoutMs: number): Promise<TransactionHandle> {
    const coordinator = await this.transactionCoordinator(transactionalId);
    // No producer id and epoch given: -1/-1, a fresh InitProducerId that bumps the id's epoch.
    const answer = await inPortTerms(`InitProducerId for ${transactionalId}`, () =>
      initProducerIdV4.api.async(coordinator, transactionalId, transactionTimeoutMs),
    );
    return { transactionalId, producerId: String(answer.producerId), epoch: answer.producerEpoch };
  }

  async listTransactions(states: readonly string[]): Promise<ListedTransaction[] | undefined> {
    const apis = await inPortTerms("ApiVersions", () => this.admin.listApis());
    if (!apis.some((a) => a.apiKey === 66)) return undefined;
    const brokers = await inPortTerms("connecting to the brokers", () => this.admin.connectToBrokers());
    const all: ListedTransaction[] = [];
    for (const connection of brokers.values()) {
      const answer = await inPortTerms("ListTransactions", () =>
        listTransactionsV0.api.async(
          connection,
          states as Parameters<typeof listTransactionsV0.api.async>[1],
          [],
          -1n,
          null,
        ),
      );
      for (const t of answer.transactionStates) {
        all.push({ transactionalId: t.transactionalId, producerId: String(t.producerId), state: t.transactionState });
      }
    }
    return all;
  }

  async describeTransaction(transactionalId: string): Promise<DescribedTransaction> {
    const coordinator = await this.transactionCoordinator(transactionalId);
    const answer = await inPortTerms(`DescribeTransactions for ${transactionalId}`, () =>
      describeTransactionsV0.api.async(coordinator, [transactionalId]),
    );
    const state = answer.transactionStates[0];
    if (!state) throw new Error(`DescribeTransactions for ${transactionalId}: no answer`);
    return {
      transactionalId,
      state: state.transactionState,
      timeoutMs: state.transactionTimeoutMs,
      startTimeMs: Number(state.transactionStartTimeMs),
      producerId: String(state.producerId),
      epoch: state.producerEpoch,
      partitions: state.topics.flatMap((t) => t.partitions.map((partition) => ({ topic: t.topic, partition }))),
    };
  }

  async listOffsets(
    partitions: readonly TopicPartition[],
    at: OffsetSpec,
  ): Promise<Array<TopicPartition & { readonly offset: number }>> {
    if (partitions.length === 0) return [];
    const timestamp =
      at === "earliest"
        ? ListOffsetTimestamps.EARLIEST
        : at === "latest"
          ? ListOffsetTimestamps.LATEST
          : BigInt(at.timestamp);
    const byTopic = new Map<string, number[]>();
    for (const { topic, partition } of partitions) byTopic.set(topic, [...(byTopic.get(topic) ?? []), partition]);
    const listed = await inPortTerms("ListOffsets", () =>
      this.admin.listOffsets({
        topics: [...byTopic].map(([name, ps]) => ({
          name,
          partitions: ps.map((partitionIndex) => ({ partitionIndex, timestamp })),
        })),
        isolationLevel: this.readCommitted
          ? FetchIsolationLevels.READ_COMMITTED
          : FetchIsolationLevels.READ_UNCOMMITTED,
      }),
    );
    return listed.flatMap((t) =>
      t.partitions.map((p) => ({ topic: t.name, partition: p.partitionIndex, offset: Number(p.offset) })),
    );
  }

  fetchCommitted(_request: {
    readonly maxWaitMs: number;
    readonly maxBytes: number;
    readonly partitions: readonly PartitionFetch[];
  }): Promise<FetchedPartition[]> {
    return Promise.reject(new Error("the @platformatic/kafka adapter does not fetch yet"));
  }

  async groupOffsets(groupId: string, topics: readonly string[]): Promise<GroupOffsets> {
    const partitions = await this.partitions(topics);
    const [group] = await inPortTerms("OffsetFetch", () =>
      this.admin.listConsumerGroupOffsets({
        groups: [{ groupId, topics: topics.map((name) => ({ name, partitionIndexes: partitions.get(name) ?? [] })) }],
      }),
    );
    return topics.map((topic) => ({
      topic,
      partitions: (partitions.get(topic) ?? []).map((partition) => {
        const found = group?.topics
          .find((t) => t.name === topic)
          ?.partitions.find((p) => p.partitionIndex === partition);
        return { partition, offset: String(found?.committedOffset ?? -1n) };
      }),
    }));
  }

  async commitGroupOffsets(
    groupId: string,
    topics: ReadonlyArray<{ topic: string; partitions: ReadonlyArray<{ partition: number; offset: string }> }>,
  ): Promise<void> {
    await inPortTerms("OffsetCommit", () =>
      this.admin.alterConsumerGroupOffsets({
        groupId,
        topics: topics.map((t) => ({
          name: t.topic,
          partitionOffsets: t.partitions.map((p) => ({ partition: p.partition, offset: BigInt(p.offset) })),
        })),
      }),
    );
  }
}
