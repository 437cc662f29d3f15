/**
 * The `KafkaConnection` port on kafkajs's public client: the client made from the options (or
 * the user's own), its admin for the checks and offsets it answers, and the cluster and
 * producers the other files of this folder build from its internals.
 */
import { ConfigurationError } from "@exactly/core";
import kafkajs, { type Kafka } from "kafkajs";
import type { GroupOffsets, KafkaConnection } from "../kafka-connection.ts";
import { createCluster, type InternalCluster } from "./cluster.ts";
import { beginTransaction, createPlainProducer, type PlainProducer, type TransactionalProducer } from "./producers.ts";

/**
 * The part of a kafkajs `Kafka` client the connector calls. Pass your own client to share its
 * SSL, SASL, logging and retry settings; it must be a kafkajs 2.2.4 `Kafka` instance, since
 * the transactional paths build on its internal cluster factory (see cluster.ts).
 */
export type KafkaClient = Pick<Kafka, "producer" | "admin" | "logger">;

export interface KafkaConnectionOptions {
  /** Bootstrap servers; used when no `client` is given. */
  readonly brokers?: readonly string[];
  /** A kafkajs client to use instead of one made from `brokers`. It is never closed by the connector. */
  readonly client?: KafkaClient;
  /** kafkajs clientId of a client made from `brokers`. Default "exactly". */
  readonly clientId?: string;
}

/** The client to use: the injected one, or one made from `brokers` (kafkajs's own logging off: errors still reject). */
function resolveClient(options: KafkaConnectionOptions): Kafka {
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

/** A connection to the brokers of `options`; nothing is opened until a cluster connects or a call is made. */
export function connectKafka(options: KafkaConnectionOptions): KafkaConnection {
  return new KafkajsConnection(resolveClient(options));
}

class KafkajsConnection implements KafkaConnection {
  private readonly kafka: Kafka;

  constructor(kafka: Kafka) {
    this.kafka = kafka;
  }

  cluster(options: { readonly readCommitted?: boolean } = {}): InternalCluster {
    return createCluster(this.kafka, options.readCommitted ? { readCommitted: true } : {});
  }

  beginTransaction(
    cluster: InternalCluster,
    options: { readonly transactionalId: string; readonly transactionTimeoutMs: number },
  ): Promise<TransactionalProducer> {
    return beginTransaction(this.kafka, cluster, options);
  }

  plainProducer(cluster: InternalCluster, options: { readonly idempotent: boolean }): Promise<PlainProducer> {
    return createPlainProducer(this.kafka, cluster, options);
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
}
