/**
 * The sink's producers on kafkajs's own message producer (partitioning, batching, retries)
 * over a shared cluster: a transactional producer per transaction whose producer id and epoch
 * can be read (the public producer hides them), and a plain producer for the sinks without
 * transactions. Both group messages by partition linearly (see
 * {@link loadLinearMessageProducer}).
 */
import { readFileSync } from "node:fs";
import Module from "node:module";
import kafkajs, { type Kafka, type Message } from "kafkajs";
import type { PlainProducer, TopicMessages as PortTopicMessages, TransactionalProducer } from "../kafka-connection.ts";
import {
  expectFunction,
  expectFunctions,
  internals,
  KafkajsInternalsError,
  kafkajsRequire,
  resolveInternal,
} from "./load.ts";
import { producingCluster } from "./produce-request.ts";
import { type Retrier, SendOrder } from "./send-order.ts";
import type { EosManager, InternalCluster, MessageProducer, TopicMessages } from "./shapes.ts";

type CreateMessageProducer = (options: {
  logger: unknown;
  cluster: InternalCluster;
  partitioner: unknown;
  eosManager: EosManager;
  idempotent: boolean;
  retrier: unknown;
  getConnectionStatus: () => string;
}) => MessageProducer;

/**
 * kafkajs 2.2.4 groups a send's messages by partition in producer/groupMessagesPerPartition.js
 * by copying the partition's array for every message (`[...current, message]`): quadratic in
 * the messages per partition of one send. At the sink's batch sizes that was the largest CPU
 * cost of the exactly-once path and most of its garbage (a 5,000-record send to 4 partitions
 * allocates ~25 MB of throwaway arrays). {@link loadLinearMessageProducer} loads a private copy
 * of messageProducer.js and sendMessages.js whose grouping is this linear one with the same
 * result: the same partitioner call per message, the same `{ [partition]: messages }` object,
 * messages in their order.
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

/**
 * Requires messageProducer.js (and through it sendMessages.js) afresh while the require cache
 * holds {@link groupMessagesLinearly} for groupMessagesPerPartition.js, then puts the cache
 * back: kafkajs's own modules stay as they were, so its public producers are untouched.
 */
function loadLinearMessageProducer(): CreateMessageProducer {
  const grouping = resolveInternal("src/producer/groupMessagesPerPartition.js");
  const sendMessages = resolveInternal("src/producer/sendMessages.js");
  const messageProducer = resolveInternal("src/producer/messageProducer.js");
  // The private copy only works if these modules still reach the grouping and each other by require.
  if (!readFileSync(sendMessages, "utf8").includes("require('./groupMessagesPerPartition')"))
    throw new KafkajsInternalsError("producer/sendMessages.js no longer requires ./groupMessagesPerPartition");
  if (!readFileSync(messageProducer, "utf8").includes("require('./sendMessages')"))
    throw new KafkajsInternalsError("producer/messageProducer.js no longer requires ./sendMessages");
  const cache = kafkajsRequire.cache;
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
      kafkajsRequire(messageProducer),
    ) as unknown as CreateMessageProducer;
  } finally {
    for (const [id, module] of saved) {
      if (module) cache[id] = module;
      else delete cache[id];
    }
  }
}

/** Loaded at import, like load.ts's internals: a kafkajs of another shape fails at load. */
const createMessageProducer = loadLinearMessageProducer();

/** The port's messages are kafkajs's `Message`s field for field: handed over as they are, no copy. */
function asKafkajs(topicMessages: PortTopicMessages[]): TopicMessages[] {
  return topicMessages as TopicMessages[];
}

function loggerOf(kafka: Kafka): unknown {
  return kafka.logger();
}

/**
 * kafkajs's message producer (with linear grouping, and record batches encoded by
 * record-batch.ts) over `eos`, sharing `cluster`'s connections, whose sends land in the order
 * they were made within every partition (see send-order.ts). Each send runs on a message
 * producer of its own, made for it, whose lock, retry and produce hooks report to that send;
 * the producer id, epoch, sequence numbers, broker locks and partitioner are shared.
 */
function messageProducer(
  logger: unknown,
  cluster: InternalCluster,
  eos: EosManager,
  idempotent: boolean,
): MessageProducer {
  expectFunctions("EosManager", eos, ["acquireBrokerLock", "releaseBrokerLock"]);
  const order = new SendOrder();
  const partitioner = kafkajs.Partitioners.DefaultPartitioner();
  const retrier = internals.createRetry(cluster.retry) as Retrier;
  return {
    sendBatch(request) {
      const send = order.begin();
      const producer = createMessageProducer({
        logger,
        cluster: producingCluster(cluster, (broker, produce) => send.produce(broker, produce)),
        partitioner,
        eosManager: send.eosManager(eos),
        idempotent,
        retrier: send.retrier(retrier),
        getConnectionStatus: () => internals.CONNECTED,
      });
      expectFunctions("MessageProducer", producer, ["sendBatch"]);
      return send.track(producer.sendBatch(request));
    },
  };
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
      await producer.sendBatch({ acks: -1, topicMessages: asKafkajs(topicMessages) });
    },
    abort: () => eos.abort(),
  };
}

/**
 * A producer without transactions on the same message producer as {@link beginTransaction}
 * (linear grouping), sharing `cluster`'s connections. Idempotent: InitProducerId first, so
 * the broker drops the duplicates of retried sends.
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
      await producer.sendBatch({ acks, topicMessages: asKafkajs(topicMessages) });
    },
  };
}
