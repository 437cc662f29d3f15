/**
 * The shapes of the kafkajs 2.2.4 internals this connector calls, as far as it calls them.
 * They are types only: load.ts and cluster.ts check at runtime that the objects have them.
 */
import type { Message } from "kafkajs";

/** kafkajs's transaction state machine (producer/eosManager). */
export interface EosManager {
  initProducerId(): Promise<void>;
  beginTransaction(): void;
  commit(): Promise<void>;
  abort(): Promise<void>;
  getProducerId(): string | number;
  getProducerEpoch(): number;
  getTransactionalId(): string;
  isInTransaction(): boolean;
  /** The producer's lock on one broker, held by sendMessages from before a Produce request's sequence numbers until its answer. */
  acquireBrokerLock(broker: object): Promise<void>;
  releaseBrokerLock(broker: object): unknown;
}

/** A request kafkajs's connection pool can send: what kafkajs's protocol/requests modules build. */
export interface ProtocolRequest {
  apiKey: number;
  apiVersion: number;
  apiName: string;
  encode(): Promise<unknown>;
}

export interface ProtocolResponse<T> {
  decode(raw: Buffer): Promise<T>;
  parse(data: T): Promise<T>;
}

export interface TopicMessages {
  topic: string;
  messages: Message[];
}

/** kafkajs's message producer: partitions, batches and sends messages, with kafkajs's retries. */
export interface MessageProducer {
  sendBatch(request: { acks: number; topicMessages: TopicMessages[] }): Promise<unknown>;
}

/** The subset of kafkajs's Broker this connector calls. */
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

/** One partition of a decoded Fetch response. */
export interface RawPartitionData {
  partition: number;
  errorCode: number;
  highWatermark: string;
  lastStableOffset?: string;
  abortedTransactions: unknown[];
  messages: RawMessage[];
}

/** One decoded record of a Fetch response, control records included. */
export interface RawMessage {
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  timestamp: string;
  headers?: Record<string, Buffer | string | Array<Buffer | string> | undefined>;
  isControlRecord?: boolean;
  batchContext?: { producerId: string; inTransaction: boolean };
}

/** The subset of kafkajs's Cluster this connector calls. */
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

export interface InternalEncoder {
  writeInt8(v: number): InternalEncoder;
  writeInt64(v: string | number): InternalEncoder;
  writeUVarInt(v: number): InternalEncoder;
  writeUVarIntString(v: string): InternalEncoder;
  writeBuffer(v: Buffer): InternalEncoder;
}

export interface InternalDecoder {
  readInt16(): number;
  readInt32(): number;
  readInt64(): { toString(): string };
  readUVarInt(): number;
  readUVarIntString(): string;
  readTaggedFields(): unknown;
}
