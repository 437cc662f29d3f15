/**
 * The one module that reaches into kafkajs internals (DESIGN §4). kafkajs's public API
 * cannot (a) tell which producer id and epoch a transactional producer holds, (b) commit a
 * transaction another process pre-committed — its only way in is InitProducerId, which
 * aborts that transaction — or (c) list open transactions. Everything else in this
 * connector goes through the functions below, never through kafkajs internals directly.
 *
 * kafkajs is pinned to exactly {@link PINNED_KAFKAJS_VERSION}; every internal used here is
 * checked when this module loads, and the tests in test/kafkajs-internals.test.ts prove the
 * calls against a real broker. A different kafkajs fails loudly, naming both versions.
 */
import { readFileSync } from "node:fs";
import Module, { createRequire } from "node:module";
import kafkajs, { type Kafka, type Message } from "kafkajs";

export const PINNED_KAFKAJS_VERSION = "2.2.4";

/** kafkajs is not the version, or not the shape, this module was written and tested against. */
export class KafkajsInternalsError extends Error {
  constructor(message: string) {
    super(
      `@exactly/kafka relies on kafkajs ${PINNED_KAFKAJS_VERSION} internals: ${message}. ` +
        `Pin kafkajs to exactly ${PINNED_KAFKAJS_VERSION}, or re-verify connectors/kafka/src/kafkajs-internals.ts against the new version.`,
    );
    this.name = "KafkajsInternalsError";
  }
}

// ---- the internals, loaded and checked once ------------------------------------------------

type Fn = (...args: never[]) => unknown;

interface EosManager {
  initProducerId(): Promise<void>;
  beginTransaction(): void;
  commit(): Promise<void>;
  abort(): Promise<void>;
  getProducerId(): string | number;
  getProducerEpoch(): number;
  getTransactionalId(): string;
  isInTransaction(): boolean;
}

interface ProtocolRequest {
  apiKey: number;
  apiVersion: number;
  apiName: string;
  encode(): Promise<unknown>;
}

interface ProtocolResponse<T> {
  decode(raw: Buffer): Promise<T>;
  parse(data: T): Promise<T>;
}

/** The subset of kafkajs's Broker this module calls. */
export interface InternalBroker {
  nodeId: number | null;
  versions: Record<number, { minVersion: number; maxVersion: number }> | null;
  connectionPool: { send<T>(protocol: { request: ProtocolRequest; response: ProtocolResponse<T> }): Promise<T> };
  initProducerId(request: {
    transactionalId: string;
    transactionTimeout: number;
  }): Promise<{ producerId: string; producerEpoch: number }>;
  endTxn(request: {
    transactionalId: string;
    producerId: string;
    producerEpoch: number;
    transactionResult: boolean;
  }): Promise<unknown>;
  offsetCommit(request: {
    groupId: string;
    groupGenerationId: number;
    memberId: string;
    topics: Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }>;
  }): Promise<unknown>;
  fetch(request: {
    isolationLevel: number;
    maxWaitTime: number;
    minBytes: number;
    maxBytes: number;
    topics: Array<{ topic: string; partitions: Array<{ partition: number; fetchOffset: string; maxBytes: number }> }>;
  }): Promise<{ responses: Array<{ topicName: string; partitions: RawPartitionData[] }> }>;
}

export interface RawPartitionData {
  partition: number;
  errorCode: number;
  highWatermark: string;
  lastStableOffset?: string;
  abortedTransactions: unknown[];
  messages: RawMessage[];
}

interface RawMessage {
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  timestamp: string;
  headers?: Record<string, Buffer | string | Array<Buffer | string> | undefined>;
  isControlRecord?: boolean;
  batchContext?: { producerId: string; inTransaction: boolean };
}

/** The subset of kafkajs's Cluster this module calls. */
export interface InternalCluster {
  retry: unknown;
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  refreshMetadata(): Promise<void>;
  refreshMetadataIfNecessary(): Promise<void>;
  addMultipleTargetTopics(topics: string[]): Promise<void>;
  getNodeIds(): number[];
  findBroker(request: { nodeId: number | string }): Promise<InternalBroker>;
  findGroupCoordinator(request: { groupId: string; coordinatorType: number }): Promise<InternalBroker>;
  findTopicPartitionMetadata(topic: string): Array<{ partitionId: number; leader: number }>;
  findLeaderForPartitions(topic: string, partitions: number[]): Record<string, number[]>;
  fetchTopicsOffset(
    topics: Array<{
      topic: string;
      partitions: Array<{ partition: number }>;
      fromBeginning?: boolean;
      fromTimestamp?: number;
    }>,
  ): Promise<Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }>>;
}

interface Internals {
  createEosManager(options: {
    logger: unknown;
    cluster: InternalCluster;
    transactionTimeout: number;
    transactional: boolean;
    transactionalId: string;
  }): EosManager;
  createMessageProducer(options: {
    logger: unknown;
    cluster: InternalCluster;
    partitioner: unknown;
    eosManager: EosManager;
    idempotent: boolean;
    retrier: unknown;
    getConnectionStatus: () => string;
  }): { sendBatch(request: { acks: number; topicMessages: TopicMessages[] }): Promise<unknown> };
  createRetry(options: unknown): unknown;
  Encoder: new () => InternalEncoder;
  Decoder: new (buffer: Buffer) => InternalDecoder;
  createErrorFromCode(code: number): Error;
  COORDINATOR_TRANSACTION: number;
  READ_COMMITTED: number;
  CONNECTED: string;
}

interface InternalEncoder {
  writeInt8(v: number): InternalEncoder;
  writeInt64(v: string | number): InternalEncoder;
  writeUVarInt(v: number): InternalEncoder;
  writeUVarIntString(v: string): InternalEncoder;
}

interface InternalDecoder {
  readInt16(): number;
  readInt32(): number;
  readInt64(): { toString(): string };
  readUVarInt(): number;
  readUVarIntString(): string;
  readTaggedFields(): unknown;
}

const require = createRequire(import.meta.url);

function requireInternal(path: string): unknown {
  try {
    return require(`kafkajs/${path}`);
  } catch (error) {
    throw new KafkajsInternalsError(`module kafkajs/${path} is missing (${(error as Error).message})`);
  }
}

function expectFunctions(what: string, value: unknown, names: readonly string[]): void {
  for (const name of names) {
    const member = (value as Record<string, unknown> | undefined)?.[name];
    if (typeof member !== "function") throw new KafkajsInternalsError(`${what}.${name} is not a function`);
  }
}

function expectFunction(what: string, value: unknown): Fn {
  if (typeof value !== "function") throw new KafkajsInternalsError(`${what} is not a function`);
  return value as Fn;
}

/**
 * kafkajs 2.2.4 groups a send's messages by partition in producer/groupMessagesPerPartition.js
 * by copying the partition's array for every message (`[...current, message]`): quadratic in
 * the messages per partition of one send. At the sink's batch sizes that was the largest CPU
 * cost of the exactly-once path and most of its garbage (a 5,000-record send to 4 partitions allocates ~25 MB
 * of throwaway arrays). This loads a private copy of messageProducer.js and sendMessages.js
 * whose grouping is a linear one with the same result: the same partitioner call per message,
 * the same `{ [partition]: messages }` object, messages in their order. kafkajs's own
 * modules in the require cache are left as they were, so its public producers are untouched.
 */
function groupMessagesLinearly({
  topic,
  partitionMetadata,
  messages,
  partitioner,
}: {
  topic: string;
  partitionMetadata: readonly unknown[];
  messages: readonly Message[];
  partitioner: (args: { topic: string; partitionMetadata: readonly unknown[]; message: Message }) => number;
}): Record<number, Message[]> {
  const grouped: Record<number, Message[]> = {};
  if (partitionMetadata.length === 0) return grouped;
  for (const message of messages) {
    const partition = partitioner({ topic, partitionMetadata, message });
    const list = grouped[partition];
    if (list) list.push(message);
    else grouped[partition] = [message];
  }
  return grouped;
}

function loadLinearMessageProducer(): Internals["createMessageProducer"] {
  const resolve = (name: string) => {
    try {
      return require.resolve(`kafkajs/src/producer/${name}.js`);
    } catch (error) {
      throw new KafkajsInternalsError(
        `module kafkajs/src/producer/${name}.js is missing (${(error as Error).message})`,
      );
    }
  };
  const grouping = resolve("groupMessagesPerPartition");
  const sendMessages = resolve("sendMessages");
  const messageProducer = resolve("messageProducer");
  // The private copy only works if these modules still reach the grouping and each other by require.
  if (!readFileSync(sendMessages, "utf8").includes("require('./groupMessagesPerPartition')"))
    throw new KafkajsInternalsError("producer/sendMessages.js no longer requires ./groupMessagesPerPartition");
  if (!readFileSync(messageProducer, "utf8").includes("require('./sendMessages')"))
    throw new KafkajsInternalsError("producer/messageProducer.js no longer requires ./sendMessages");
  const cache = require.cache;
  const saved = [grouping, sendMessages, messageProducer].map((id) => [id, cache[id]] as const);
  const replacement = new Module(grouping);
  replacement.filename = grouping;
  replacement.exports = groupMessagesLinearly;
  replacement.loaded = true;
  try {
    cache[grouping] = replacement;
    delete cache[sendMessages];
    delete cache[messageProducer];
    return expectFunction(
      "src/producer/messageProducer.js",
      require(messageProducer),
    ) as unknown as Internals["createMessageProducer"];
  } finally {
    for (const [id, module] of saved) {
      if (module) cache[id] = module;
      else delete cache[id];
    }
  }
}

function loadInternals(): Internals {
  const version = (requireInternal("package.json") as { version?: string }).version;
  if (version !== PINNED_KAFKAJS_VERSION) throw new KafkajsInternalsError(`found kafkajs ${version}`);
  const errors = requireInternal("src/protocol/error.js") as Record<string, unknown>;
  const coordinatorTypes = requireInternal("src/protocol/coordinatorTypes.js") as Record<string, unknown>;
  const isolation = requireInternal("src/protocol/isolationLevel.js") as Record<string, unknown>;
  const status = requireInternal("src/network/connectionStatus.js") as {
    CONNECTION_STATUS?: Record<string, unknown>;
  };
  const Encoder = expectFunction("src/protocol/encoder.js", requireInternal("src/protocol/encoder.js"));
  const Decoder = expectFunction("src/protocol/decoder.js", requireInternal("src/protocol/decoder.js"));
  expectFunctions("Encoder.prototype", Encoder.prototype, [
    "writeInt8",
    "writeInt64",
    "writeUVarInt",
    "writeUVarIntString",
  ]);
  expectFunctions("Decoder.prototype", Decoder.prototype, [
    "readInt16",
    "readInt32",
    "readInt64",
    "readUVarInt",
    "readUVarIntString",
    "readTaggedFields",
  ]);
  if (coordinatorTypes.TRANSACTION !== 1) throw new KafkajsInternalsError("coordinatorTypes.TRANSACTION is not 1");
  if (isolation.READ_COMMITTED !== 1) throw new KafkajsInternalsError("isolationLevel.READ_COMMITTED is not 1");
  const connected = status.CONNECTION_STATUS?.CONNECTED;
  if (typeof connected !== "string") throw new KafkajsInternalsError("CONNECTION_STATUS.CONNECTED is missing");
  return {
    createEosManager: expectFunction(
      "src/producer/eosManager",
      requireInternal("src/producer/eosManager/index.js"),
    ) as unknown as Internals["createEosManager"],
    createMessageProducer: loadLinearMessageProducer(),
    createRetry: expectFunction(
      "src/retry",
      requireInternal("src/retry/index.js"),
    ) as unknown as Internals["createRetry"],
    Encoder: Encoder as unknown as Internals["Encoder"],
    Decoder: Decoder as unknown as Internals["Decoder"],
    createErrorFromCode: expectFunction(
      "protocol/error.js createErrorFromCode",
      errors.createErrorFromCode,
    ) as unknown as Internals["createErrorFromCode"],
    COORDINATOR_TRANSACTION: 1,
    READ_COMMITTED: 1,
    CONNECTED: connected,
  };
}

/** Loaded at import: a kafkajs of another shape fails when the connector loads, not mid-run. */
const internals = loadInternals();

// ---- clusters -------------------------------------------------------------------------------

const CLUSTER_METHODS = [
  "connect",
  "disconnect",
  "refreshMetadata",
  "refreshMetadataIfNecessary",
  "addMultipleTargetTopics",
  "getNodeIds",
  "findBroker",
  "findGroupCoordinator",
  "findTopicPartitionMetadata",
  "findLeaderForPartitions",
  "fetchTopicsOffset",
] as const;

const BROKER_METHODS = ["initProducerId", "endTxn", "fetch"] as const;

function checkBroker(broker: InternalBroker): InternalBroker {
  expectFunctions("Broker", broker, BROKER_METHODS);
  expectFunctions("Broker.connectionPool", broker.connectionPool, ["send"]);
  return broker;
}

/**
 * A connection to the cluster, made from a kafkajs `Kafka` client through its private
 * cluster factory (the one `kafka.producer()` uses), so brokers, SSL, SASL and retry
 * settings are the client's own. The caller connects and disconnects it.
 */
export function createCluster(kafka: Kafka, options: { readCommitted?: boolean } = {}): InternalCluster {
  const symbol = Object.getOwnPropertySymbols(kafka).find((s) => s.description === "private:Kafka:createCluster");
  const factory = symbol === undefined ? undefined : (kafka as unknown as Record<symbol, unknown>)[symbol];
  if (typeof factory !== "function") {
    throw new KafkajsInternalsError("the Kafka client has no private cluster factory (private:Kafka:createCluster)");
  }
  const cluster = (factory as (o: object) => InternalCluster)({
    allowAutoTopicCreation: false,
    ...(options.readCommitted ? { isolationLevel: internals.READ_COMMITTED } : {}),
  });
  expectFunctions("Cluster", cluster, CLUSTER_METHODS);
  return cluster;
}

function loggerOf(kafka: Kafka): unknown {
  return kafka.logger();
}

// ---- (a) a transactional producer whose id, producer id and epoch can be read ----------------

export interface TopicMessages {
  topic: string;
  messages: Message[];
}

/** The identity of one Kafka transaction: InitProducerId gives every transaction a fresh epoch. */
export interface TransactionHandle {
  readonly transactionalId: string;
  /** INT64, as a decimal string. */
  readonly producerId: string;
  readonly epoch: number;
}

/** kafkajs's message producer (with linear grouping) over `eos`, sharing `cluster`'s connections. */
function messageProducer(
  logger: unknown,
  cluster: InternalCluster,
  eos: EosManager,
  idempotent: boolean,
): ReturnType<Internals["createMessageProducer"]> {
  const producer = internals.createMessageProducer({
    logger,
    cluster,
    partitioner: kafkajs.Partitioners.DefaultPartitioner(),
    eosManager: eos,
    idempotent,
    retrier: internals.createRetry(cluster.retry),
    getConnectionStatus: () => internals.CONNECTED,
  });
  expectFunctions("MessageProducer", producer, ["sendBatch"]);
  return producer;
}

/** A transactional producer for exactly one transaction. */
export interface TransactionalProducer extends TransactionHandle {
  sendBatch(topicMessages: TopicMessages[]): Promise<void>;
  /** EndTxn(commit) through the producer's own state machine. */
  commit(): Promise<void>;
  /** EndTxn(abort) through the producer's own state machine. */
  abort(): Promise<void>;
}

/**
 * InitProducerId on `transactionalId` (which fences and aborts whatever an earlier producer of
 * that id left open), then begins a transaction. The returned producer shares `cluster`'s
 * connections, so a producer per transaction costs one InitProducerId round trip.
 */
export async function beginTransaction(
  kafka: Kafka,
  cluster: InternalCluster,
  options: { transactionalId: string; transactionTimeoutMs: number },
): Promise<TransactionalProducer> {
  const logger = loggerOf(kafka);
  const eos = internals.createEosManager({
    logger,
    cluster,
    transactionTimeout: options.transactionTimeoutMs,
    transactional: true,
    transactionalId: options.transactionalId,
  });
  expectFunctions("EosManager", eos, [
    "initProducerId",
    "beginTransaction",
    "commit",
    "abort",
    "getProducerId",
    "getProducerEpoch",
  ]);
  await eos.initProducerId();
  eos.beginTransaction();
  const producer = messageProducer(logger, cluster, eos, true);
  const producerId = String(eos.getProducerId());
  const epoch = eos.getProducerEpoch();
  if (producerId === "-1" || typeof epoch !== "number") {
    throw new KafkajsInternalsError("EosManager did not expose a producer id and epoch after InitProducerId");
  }
  return {
    transactionalId: options.transactionalId,
    producerId,
    epoch,
    async sendBatch(topicMessages) {
      await producer.sendBatch({ acks: -1, topicMessages });
    },
    commit: () => eos.commit(),
    abort: () => eos.abort(),
  };
}

/** A producer outside transactions, for AT_LEAST_ONCE (idempotent) and NONE. */
export interface PlainProducer {
  /** Resolves once the brokers acknowledged every message (`acks`: -1 all in-sync replicas, 1 the leader). */
  sendBatch(topicMessages: TopicMessages[], acks: -1 | 1): Promise<void>;
}

/**
 * A producer without transactions on the same message producer as {@link beginTransaction}
 * (linear grouping, see {@link loadLinearMessageProducer}), sharing `cluster`'s connections.
 * Idempotent: InitProducerId first, so the broker drops the duplicates of retried sends.
 */
export async function createPlainProducer(
  kafka: Kafka,
  cluster: InternalCluster,
  options: { idempotent: boolean },
): Promise<PlainProducer> {
  const logger = loggerOf(kafka);
  const eos = internals.createEosManager({
    logger,
    cluster,
    // Unused without transactions; kafkajs's own producer passes its 60 s default.
    transactionTimeout: 60_000,
    transactional: false,
    transactionalId: "",
  });
  expectFunctions("EosManager", eos, ["initProducerId"]);
  if (options.idempotent) await eos.initProducerId();
  const producer = messageProducer(logger, cluster, eos, options.idempotent);
  return {
    async sendBatch(topicMessages, acks) {
      await producer.sendBatch({ acks, topicMessages });
    },
  };
}

// ---- (b) EndTxn for a stored {transactionalId, producerId, epoch} ----------------------------

async function transactionCoordinator(cluster: InternalCluster, transactionalId: string): Promise<InternalBroker> {
  await cluster.refreshMetadataIfNecessary();
  const broker = await cluster.findGroupCoordinator({
    groupId: transactionalId,
    coordinatorType: internals.COORDINATOR_TRANSACTION,
  });
  return checkBroker(broker);
}

/**
 * Sends EndTxn for exactly the transaction `handle` names, to its transaction coordinator,
 * without InitProducerId (which would abort it). Resolves when the broker accepted it;
 * rejects with kafkajs's protocol error (its `type`, e.g. INVALID_PRODUCER_EPOCH) otherwise.
 * Classifying the answer is the caller's job (see kafka-sink.ts).
 */
export async function endTransaction(
  cluster: InternalCluster,
  handle: TransactionHandle,
  commit: boolean,
): Promise<void> {
  const broker = await transactionCoordinator(cluster, handle.transactionalId);
  await broker.endTxn({
    transactionalId: handle.transactionalId,
    producerId: handle.producerId,
    producerEpoch: handle.epoch,
    transactionResult: commit,
  });
}

// ---- (c) fencing and listing transactions ---------------------------------------------------

/**
 * InitProducerId on `transactionalId`: bumps its epoch, which aborts a transaction left open
 * under it and fences its producer. Returns the new producer id and epoch (epoch 0: the id
 * was unknown to the broker). Rejects with CONCURRENT_TRANSACTIONS while an earlier
 * transaction of the id is still completing; the caller retries.
 */
export async function fenceTransactionalId(
  cluster: InternalCluster,
  transactionalId: string,
  transactionTimeoutMs: number,
): Promise<TransactionHandle> {
  const broker = await transactionCoordinator(cluster, transactionalId);
  const result = await broker.initProducerId({ transactionalId, transactionTimeout: transactionTimeoutMs });
  return { transactionalId, producerId: String(result.producerId), epoch: result.producerEpoch };
}

export interface ListedTransaction {
  readonly transactionalId: string;
  readonly producerId: string;
  /** Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Empty, … */
  readonly state: string;
}

const LIST_TRANSACTIONS = 66;

/**
 * ListTransactions (KIP-664, Kafka ≥ 3.0) sent to every broker, each answering for the
 * transaction-log partitions it leads. Returns undefined when some broker does not support
 * it, so the caller can fall back to probing ids. kafkajs 2.2.4 has no such request, and no
 * flexible-version request headers: header v2 only adds an empty tagged-field section after
 * the client id, which is the first byte of the body written here; likewise the response
 * header v1's tagged fields are the first thing the decoder reads.
 */
export async function listTransactions(
  cluster: InternalCluster,
  states: readonly string[],
): Promise<ListedTransaction[] | undefined> {
  await cluster.refreshMetadata();
  const all: ListedTransaction[] = [];
  for (const nodeId of cluster.getNodeIds()) {
    const broker = await cluster.findBroker({ nodeId });
    const supported = broker.versions?.[LIST_TRANSACTIONS];
    if (!supported || supported.minVersion > 0) return undefined;
    const request: ProtocolRequest = {
      apiKey: LIST_TRANSACTIONS,
      apiVersion: 0,
      apiName: "ListTransactions",
      encode: async () => {
        const encoder = new internals.Encoder();
        encoder.writeInt8(0); // request header v2: no tagged fields
        encoder.writeUVarInt(states.length + 1);
        for (const state of states) encoder.writeUVarIntString(state);
        encoder.writeUVarInt(1); // ProducerIdFilters: empty compact array
        encoder.writeInt8(0); // body: no tagged fields
        return encoder;
      },
    };
    const response: ProtocolResponse<{ errorCode: number; transactions: ListedTransaction[] }> = {
      decode: async (raw) => {
        const decoder = new internals.Decoder(raw);
        decoder.readTaggedFields(); // response header v1
        decoder.readInt32(); // throttle time
        const errorCode = decoder.readInt16();
        const unknownStates = decoder.readUVarInt() - 1;
        for (let i = 0; i < unknownStates; i++) decoder.readUVarIntString();
        const count = decoder.readUVarInt() - 1;
        const transactions: ListedTransaction[] = [];
        for (let i = 0; i < count; i++) {
          const transactionalId = decoder.readUVarIntString();
          const producerId = decoder.readInt64().toString();
          const state = decoder.readUVarIntString();
          decoder.readTaggedFields();
          transactions.push({ transactionalId, producerId, state });
        }
        return { errorCode, transactions };
      },
      parse: async (data) => {
        if (data.errorCode !== 0) throw internals.createErrorFromCode(data.errorCode);
        return data;
      },
    };
    const result = await broker.connectionPool.send({ request, response });
    all.push(...result.transactions);
  }
  return all;
}

// ---- reading with read_committed ------------------------------------------------------------

export interface FetchedRecord {
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp: string;
  readonly headers: Record<string, Buffer | string | Array<Buffer | string> | undefined>;
}

export interface FetchedPartition {
  readonly topic: string;
  readonly partition: number;
  readonly errorCode: number;
  /** Committed, non-control records at or after the fetch offset. */
  readonly records: FetchedRecord[];
  /** Where the next fetch starts: past every record returned, aborted and control ones too. */
  readonly nextOffset: string | undefined;
  readonly highWatermark: string;
  /** The last stable offset: below the first record of a still-open transaction. */
  readonly lastStableOffset: string | undefined;
}

interface AbortedTransaction {
  producerId: string;
  firstOffset: string;
}

const ABORT_MARKER_KEY = Buffer.from([0, 0, 0, 0]);

/**
 * Drops control records and the records of aborted transactions, as Kafka's Java consumer
 * does: aborted transactions ordered by first offset, a producer's records skipped from its
 * aborted transaction's first offset until its abort marker. kafkajs 2.2.4's own filter
 * (consumer/filterAbortedMessages.js) takes the broker's list in the order given, which is
 * by abort-marker offset; when two aborted transactions interleave on one partition, the
 * records of the one that began first but ended last leak to read_committed readers. The
 * tests show it (test/kafkajs-internals.test.ts).
 */
function withoutAborted(
  messages: readonly RawMessage[],
  aborted: readonly AbortedTransaction[] | undefined,
): RawMessage[] {
  if (!aborted || aborted.length === 0) {
    // Nothing aborted in this range (the common case): only the control records go.
    const out: RawMessage[] = [];
    for (const message of messages) if (!message.isControlRecord) out.push(message);
    return out;
  }
  const queue = [...aborted].sort((a, b) => {
    const d = BigInt(a.firstOffset) - BigInt(b.firstOffset);
    return d < 0n ? -1 : d > 0n ? 1 : 0;
  });
  const abortedProducers = new Set<string>();
  const out: RawMessage[] = [];
  for (const message of messages) {
    const offset = BigInt(message.offset);
    while (queue.length > 0 && BigInt((queue[0] as AbortedTransaction).firstOffset) <= offset) {
      abortedProducers.add(String((queue.shift() as AbortedTransaction).producerId));
    }
    const producerId = message.batchContext ? String(message.batchContext.producerId) : undefined;
    if (message.isControlRecord) {
      if (producerId !== undefined && message.key && Buffer.from(message.key).equals(ABORT_MARKER_KEY)) {
        abortedProducers.delete(producerId);
      }
      continue;
    }
    if (message.batchContext?.inTransaction && producerId !== undefined && abortedProducers.has(producerId)) continue;
    out.push(message);
  }
  return out;
}

/** a >= b for two non-negative INT64 decimal strings; Numbers while exact, else BigInts. */
function offsetAtLeast(a: string, b: string): boolean {
  if (a.length <= 15 && b.length <= 15) return Number(a) >= Number(b);
  return BigInt(a) >= BigInt(b);
}

/**
 * The fetched messages at or after the fetch offset, in order: a fetch can begin inside a
 * record batch, whose earlier records the broker returns too (as kafkajs's consumer
 * Batch.messagesWithinOffset drops them; that class also runs kafkajs's own aborted filter,
 * which is not used here).
 */
function withinOffset(messages: readonly RawMessage[], fetchOffset: string): readonly RawMessage[] {
  let first = 0;
  while (first < messages.length && !offsetAtLeast((messages[first] as RawMessage).offset, fetchOffset)) first++;
  if (first === 0) return messages;
  return messages.slice(first);
}

/**
 * One Fetch request to `broker` with read_committed isolation; records of aborted
 * transactions and control records are dropped (see {@link withoutAborted}).
 */
export async function fetchCommitted(
  broker: InternalBroker,
  request: {
    maxWaitTimeMs: number;
    maxBytes: number;
    partitions: Array<{ topic: string; partition: number; fetchOffset: string; maxBytes: number }>;
  },
): Promise<FetchedPartition[]> {
  checkBroker(broker);
  const byTopic = new Map<string, Array<{ partition: number; fetchOffset: string; maxBytes: number }>>();
  for (const p of request.partitions) {
    const list = byTopic.get(p.topic) ?? [];
    list.push({ partition: p.partition, fetchOffset: p.fetchOffset, maxBytes: p.maxBytes });
    byTopic.set(p.topic, list);
  }
  const { responses } = await broker.fetch({
    isolationLevel: internals.READ_COMMITTED,
    maxWaitTime: request.maxWaitTimeMs,
    minBytes: 1,
    maxBytes: request.maxBytes,
    topics: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })),
  });
  const out: FetchedPartition[] = [];
  for (const { topicName, partitions } of responses) {
    for (const data of partitions) {
      const fetchOffset = request.partitions.find((p) => p.topic === topicName && p.partition === data.partition)
        ?.fetchOffset as string;
      if (data.errorCode !== 0) {
        out.push({
          topic: topicName,
          partition: data.partition,
          errorCode: data.errorCode,
          records: [],
          nextOffset: undefined,
          highWatermark: data.highWatermark,
          lastStableOffset: data.lastStableOffset,
        });
        continue;
      }
      const within = withinOffset(data.messages, fetchOffset);
      const last = within[within.length - 1];
      const committed = withoutAborted(within, data.abortedTransactions as AbortedTransaction[]);
      // The decoded messages themselves, not copies: one object a record fewer.
      for (const message of committed) message.headers ??= {};
      out.push({
        topic: topicName,
        partition: data.partition,
        errorCode: 0,
        records: committed as FetchedRecord[],
        nextOffset: last ? (BigInt(last.offset) + 1n).toString() : undefined,
        highWatermark: data.highWatermark,
        lastStableOffset: data.lastStableOffset,
      });
    }
  }
  return out;
}

/**
 * Commits offsets to a consumer group without joining it (generation -1, no member id, as
 * Kafka's own admin client does): the group only records progress for lag monitoring.
 * kafkajs's public `admin.setOffsets` would join the group with a consumer to do this.
 */
export async function commitGroupOffsets(
  cluster: InternalCluster,
  groupId: string,
  topics: Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }>,
): Promise<void> {
  await cluster.refreshMetadataIfNecessary();
  const broker = await cluster.findGroupCoordinator({ groupId, coordinatorType: 0 });
  expectFunctions("Broker", broker, ["offsetCommit"]);
  await broker.offsetCommit({ groupId, groupGenerationId: -1, memberId: "", topics });
}

/** kafkajs's error for a protocol error code (its `type` names it). */
export function protocolError(code: number): Error {
  return internals.createErrorFromCode(code);
}
