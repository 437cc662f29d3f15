/**
 * The `KafkaConnection` port on @platformatic/kafka, through its public exports only: one
 * `Admin` client is the connection (its metadata, its pool of one authenticated socket per
 * broker), its admin calls answer offsets and configs, and the protocol's own API functions,
 * sent on the pool's sockets, do what no client method does: InitProducerId and EndTxn by a
 * stored handle (a restarted process commits what a crashed one pre-committed), and
 * ListTransactions / DescribeTransactions.
 */

import { ConfigurationError, TransientError } from "@exactly/core";
import {
  Admin,
  addPartitionsToTxnV3,
  ConfigResourceTypes,
  type Connection,
  compressionsAlgorithms,
  compressionsAlgorithmsByBitmask,
  createAPI,
  describeTransactionsV0,
  endTxnV3,
  FetchIsolationLevels,
  FindCoordinatorKeyTypes,
  initProducerIdV4,
  ListOffsetTimestamps,
  listTransactionsV0,
  Writer,
} from "@platformatic/kafka";
import { initProducerIdRetried } from "../fencing.ts";
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
import { isRetriableKafkaError } from "../kafka-errors.ts";
import type { KafkaConnectionOptions, KafkaConnectionUse } from "../open-connection.ts";
import type { KafkaCompression } from "../options.ts";
import { committedPartitions } from "../protocol/committed-records.ts";
import { encodeFetchRequest, FETCH_REQUEST_VERSION } from "../protocol/fetch-request.ts";
import { type Decompress, decodeFetchResponse, UnsupportedCompressionError } from "../protocol/fetch-response.ts";
import type { BatchCompression } from "../protocol/record-batch.ts";
import { inPortTerms, KafkaProtocolError } from "./errors.ts";
import { ProducerSession } from "./producers.ts";

/** Fetch v11 with a body we encoded; the answer's bytes are handed to ../protocol/fetch-response.ts. */
const fetchRaw = createAPI<[body: Buffer], Buffer>(
  1,
  FETCH_REQUEST_VERSION,
  (body: Buffer) => Writer.create().append(body),
  (_correlationId, _apiKey, _apiVersion, reader) => reader.buffer.slice(reader.position, reader.length),
  false,
  false,
);

/** A compressed batch's records through the client's codecs (gzip, snappy, lz4, zstd). */
const decompress: Decompress = (codec, data) => {
  const algorithm = (
    compressionsAlgorithmsByBitmask as Record<number, { decompressSync(d: Buffer): Buffer; available?: boolean }>
  )[codec];
  if (!algorithm || algorithm.available === false) {
    throw new UnsupportedCompressionError(
      `a fetched batch is compressed with codec ${codec}, which this Node cannot decompress`,
    );
  }
  return algorithm.decompressSync(data);
};

/** Partition errors whose answer says the metadata is stale: refreshed for the next fetch. */
const STALE_METADATA = new Set([
  3, // UNKNOWN_TOPIC_OR_PARTITION
  5, // LEADER_NOT_AVAILABLE
  6, // NOT_LEADER_OR_FOLLOWER
  74, // FENCED_LEADER_EPOCH
  75, // UNKNOWN_LEADER_EPOCH
]);
const OFFSET_OUT_OF_RANGE = 1;

export function openPlatformaticConnection(
  options: KafkaConnectionOptions,
  use: KafkaConnectionUse = {},
): KafkaConnection {
  return new PlatformaticConnection(options, use);
}

/** The client's compressor of `compression` ("none": none). */
function batchCompression(compression: KafkaCompression | undefined): BatchCompression | undefined {
  if (compression === undefined || compression === "none") return undefined;
  const algorithm = compressionsAlgorithms[compression];
  if (!algorithm.available) {
    throw new ConfigurationError("compression", `${compression} is not available on this Node ${process.version}`);
  }
  return { codec: algorithm.bitmask, compress: (records) => algorithm.compressSync(records) };
}

class PlatformaticConnection implements KafkaConnection {
  private readonly admin: Admin;
  private readonly readCommitted: boolean;
  private readonly compression: BatchCompression | undefined;

  constructor(options: KafkaConnectionOptions, use: KafkaConnectionUse) {
    this.admin = new Admin({
      clientId: options.clientId ?? "exactly",
      bootstrapBrokers: [...(options.brokers ?? [])],
      // Metadata is kept 5 minutes (Kafka's Java producer's metadata.max.age.ms); a moved
      // leader is learnt sooner, from the errors.
      metadataMaxAge: 300_000,
      ...(options.sasl ? { sasl: { ...options.sasl } } : {}),
      ...(options.tls ? { tls: options.tls === true ? {} : options.tls } : {}),
    });
    this.readCommitted = use.readCommitted === true;
    this.compression = batchCompression(use.compression);
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

  async ensureTopic(request: {
    readonly topic: string;
    readonly partitions: number;
    readonly configs: Readonly<Record<string, string>>;
  }): Promise<{ created: boolean; partitions: number; configs: Record<string, string | undefined> }> {
    const { topic } = request;
    const exists = async () =>
      (await inPortTerms("Metadata", () => this.admin.listTopics({ includeInternals: false }))).includes(topic);
    let created = false;
    if (!(await exists())) {
      try {
        await inPortTerms("CreateTopics", () =>
          this.admin.createTopics({
            topics: [topic],
            partitions: request.partitions,
            replicas: -1,
            configs: Object.entries(request.configs).map(([name, value]) => ({ name, value })),
          }),
        );
        created = true;
      } catch (error) {
        // Another process created it meanwhile: what it has is checked below like any topic's.
        if (!(await exists())) throw error;
      }
    }
    const partitions = await this.partitionsWithLeaders(topic);
    const [described] = await inPortTerms("DescribeConfigs", () =>
      this.admin.describeConfigs({
        resources: [
          {
            resourceType: ConfigResourceTypes.TOPIC,
            resourceName: topic,
            configurationKeys: Object.keys(request.configs),
          },
        ],
      }),
    );
    const configs: Record<string, string | undefined> = {};
    for (const name of Object.keys(request.configs)) {
      configs[name] = described?.configs.find((c) => c.name === name)?.value ?? undefined;
    }
    return { created, partitions, configs };
  }

  /** The topic's partition count once every partition has a leader (a topic just created has none for a moment). */
  private async partitionsWithLeaders(topic: string): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      const metadata = await inPortTerms("Metadata", () => this.admin.metadata({ topics: [topic], forceUpdate: true }));
      const described = metadata.topics.get(topic);
      const count = described?.partitionsCount ?? 0;
      const led = described ? described.partitions.filter((p) => p.leader >= 0).length : 0;
      if (count > 0 && led === count) return count;
      if (attempt >= 100) return count;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async deleteRecordsBefore(
    topic: string,
    offsets: ReadonlyArray<{ partition: number; offset: number }>,
  ): Promise<void> {
    if (offsets.length === 0) return;
    await inPortTerms("DeleteRecords", () =>
      this.admin.deleteRecords({
        topics: [
          { name: topic, partitions: offsets.map((o) => ({ partition: o.partition, offset: BigInt(o.offset) })) },
        ],
      }),
    );
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

  async beginTransaction(options: {
    readonly transactionalId: string;
    readonly transactionTimeoutMs: number;
  }): Promise<TransactionalProducer> {
    const { transactionalId, transactionTimeoutMs } = options;
    // The fence of whatever an earlier producer of the id left open.
    const handle = await initProducerIdRetried(this, transactionalId, transactionTimeoutMs);
    const producerId = BigInt(handle.producerId);
    const added = new Set<string>();
    const session = new ProducerSession(
      this.admin,
      { transactionalId, producerId, producerEpoch: handle.epoch },
      this.compression,
      async (partitions) => {
        const fresh = [...partitions]
          .map(([name, ps]) => ({ name, partitions: [...ps].filter((p) => !added.has(`${name}\0${p}`)) }))
          .filter((t) => t.partitions.length > 0);
        if (fresh.length === 0) return;
        const coordinator = await this.transactionCoordinator(transactionalId);
        await inPortTerms(`AddPartitionsToTxn for ${transactionalId}`, () =>
          addPartitionsToTxnV3.api.async(coordinator, [
            { transactionalId, producerId, producerEpoch: handle.epoch, verifyOnly: false, topics: fresh },
          ]),
        );
        for (const t of fresh) for (const p of t.partitions) added.add(`${t.name}\0${p}`);
      },
    );
    return {
      ...handle,
      sendBatch: (topicMessages) => session.sendBatch(topicMessages, -1),
      abort: () => this.endTransaction(handle, false),
    };
  }

  async plainProducer(options: { readonly idempotent: boolean }): Promise<PlainProducer> {
    let identity = { transactionalId: null, producerId: -1n, producerEpoch: -1 };
    if (options.idempotent) {
      const brokers = await inPortTerms("connecting to the brokers", () => this.admin.connectToBrokers());
      const [any] = brokers.values();
      if (!any) throw new Error("no broker to ask for a producer id");
      const answer = await inPortTerms("InitProducerId", () => initProducerIdV4.api.async(any, null, 60_000));
      identity = { transactionalId: null, producerId: answer.producerId, producerEpoch: answer.producerEpoch };
    }
    const session = new ProducerSession(this.admin, identity, this.compression);
    return { sendBatch: (topicMessages, acks) => session.sendBatch(topicMessages, acks) };
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

  async fetchCommitted(request: {
    readonly maxWaitMs: number;
    readonly maxBytes: number;
    readonly partitions: readonly PartitionFetch[];
  }): Promise<FetchedPartition[]> {
    const topics = [...new Set(request.partitions.map((p) => p.topic))];
    const metadata = await inPortTerms("Metadata", () => this.admin.metadata({ topics }));
    const byLeader = new Map<number, PartitionFetch[]>();
    for (const p of request.partitions) {
      const leader = metadata.topics.get(p.topic)?.partitions[p.partition]?.leader;
      if (leader === undefined || leader < 0) continue;
      const list = byLeader.get(leader);
      if (list) list.push(p);
      else byLeader.set(leader, [p]);
    }
    // A partition whose leader is unknown gets nothing this time; the metadata is refreshed for the next.
    if ([...byLeader.values()].reduce((n, ps) => n + ps.length, 0) < request.partitions.length) {
      await this.refreshMetadata(topics);
    }
    const answers = await Promise.all(
      [...byLeader].map(async ([leader, partitions]) => {
        const broker = metadata.brokers.get(leader);
        try {
          if (!broker)
            throw new KafkaProtocolError("LEADER_NOT_AVAILABLE", true, `broker ${leader} is not in the metadata`);
          const socket = await inPortTerms("connecting to a leader", () =>
            this.admin.connections.get({ host: broker.host, port: broker.port }),
          );
          const raw = await inPortTerms("Fetch", () =>
            fetchRaw.async(
              socket,
              encodeFetchRequest({ maxWaitMs: request.maxWaitMs, minBytes: 1, maxBytes: request.maxBytes, partitions }),
            ),
          );
          const decoded = await decodeFetchResponse(FETCH_REQUEST_VERSION, raw, decompress);
          const stale = decoded.responses.some((t) => t.partitions.some((p) => STALE_METADATA.has(p.errorCode)));
          if (stale) await this.refreshMetadata(topics);
          const refused = decoded.responses.flatMap((t) =>
            t.partitions
              .filter((p) => p.errorCode === OFFSET_OUT_OF_RANGE)
              .map((p) => ({ topic: t.topicName, partition: p.partition })),
          );
          if (refused.length > 0) throw new KafkaOffsetOutOfRangeError(refused);
          return committedPartitions(decoded.responses, partitions);
        } catch (error) {
          if (error instanceof KafkaOffsetOutOfRangeError) throw error;
          if (isRetriableKafkaError(error) || error instanceof TransientError) {
            await this.refreshMetadata(topics);
            return [];
          }
          throw error;
        }
      }),
    );
    return answers.flat();
  }

  private async refreshMetadata(topics: readonly string[]): Promise<void> {
    await this.admin.metadata({ topics: [...topics], forceUpdate: true }).catch(() => {});
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
