/**
 * Transactions by their stored identity, without a producer: EndTxn for a
 * `{transactionalId, producerId, epoch}` a crashed process pre-committed, InitProducerId to
 * fence an id (which aborts what is open under it), and ListTransactions to find lingering
 * ones. kafkajs's public producer can do none of these without aborting the transaction first.
 */
import type { DescribedTransaction, ListedTransaction, TransactionHandle } from "../kafka-connection.ts";
import { checkBroker } from "./cluster.ts";
import { NO_ERROR, protocolError } from "./error-codes.ts";
import { internals } from "./load.ts";
import type { InternalBroker, InternalCluster, ProtocolRequest, ProtocolResponse } from "./shapes.ts";

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
 * Classifying the answer is the caller's job (see ../kafka-transactional-sink.ts).
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

/** The API key of ListTransactions. */
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
        if (data.errorCode !== NO_ERROR) throw protocolError(data.errorCode);
        return data;
      },
    };
    const result = await broker.connectionPool.send({ request, response });
    all.push(...result.transactions);
  }
  return all;
}

/** The API key of DescribeTransactions. */
const DESCRIBE_TRANSACTIONS = 65;

/**
 * DescribeTransactions (KIP-664, Kafka ≥ 3.0) for one transactional id, asked of its
 * transaction coordinator: its state, start time, epoch and the partitions it has written
 * to. Encoded by hand for the reason {@link listTransactions} gives.
 */
export async function describeTransaction(
  cluster: InternalCluster,
  transactionalId: string,
): Promise<DescribedTransaction> {
  const broker = await transactionCoordinator(cluster, transactionalId);
  const supported = broker.versions?.[DESCRIBE_TRANSACTIONS];
  if (!supported || supported.minVersion > 0) {
    throw new Error("the transaction coordinator does not support DescribeTransactions (Kafka < 3.0)");
  }
  const request: ProtocolRequest = {
    apiKey: DESCRIBE_TRANSACTIONS,
    apiVersion: 0,
    apiName: "DescribeTransactions",
    encode: async () => {
      const encoder = new internals.Encoder();
      encoder.writeInt8(0); // request header v2: no tagged fields
      encoder.writeUVarInt(2); // TransactionalIds: a compact array of one
      encoder.writeUVarIntString(transactionalId);
      encoder.writeInt8(0); // body: no tagged fields
      return encoder;
    },
  };
  const response: ProtocolResponse<{ errorCode: number; described: DescribedTransaction }> = {
    decode: async (raw) => {
      const decoder = new internals.Decoder(raw);
      decoder.readTaggedFields(); // response header v1
      decoder.readInt32(); // throttle time
      const count = decoder.readUVarInt() - 1;
      if (count !== 1) throw new Error(`DescribeTransactions answered ${count} states for one transactional id`);
      const errorCode = decoder.readInt16();
      const id = decoder.readUVarIntString();
      const state = decoder.readUVarIntString();
      const timeoutMs = decoder.readInt32();
      const startTimeMs = Number(decoder.readInt64().toString());
      const producerId = decoder.readInt64().toString();
      const epoch = decoder.readInt16();
      const partitions: Array<{ topic: string; partition: number }> = [];
      const topics = decoder.readUVarInt() - 1;
      for (let t = 0; t < topics; t++) {
        const topic = decoder.readUVarIntString();
        const n = decoder.readUVarInt() - 1;
        for (let i = 0; i < n; i++) partitions.push({ topic, partition: decoder.readInt32() });
        decoder.readTaggedFields();
      }
      decoder.readTaggedFields();
      return {
        errorCode,
        described: { transactionalId: id, state, timeoutMs, startTimeMs, producerId, epoch, partitions },
      };
    },
    parse: async (data) => {
      if (data.errorCode !== NO_ERROR) throw protocolError(data.errorCode);
      return data;
    },
  };
  const result = await broker.connectionPool.send({ request, response });
  return result.described;
}
