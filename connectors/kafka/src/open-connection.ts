/**
 * Where a `KafkaConnection` comes from: the one file outside an adapter folder that names an
 * adapter. The sinks, the source and the lingering-work finder open their connections here and
 * see only the port (kafka-connection.ts).
 */
import { ConfigurationError } from "@exactly/core";
import type { KafkaConnection } from "./kafka-connection.ts";
import { type KafkajsOptions, openKafkajsConnection } from "./kafkajs/kafkajs-connection.ts";

/** The Kafka client library a connection runs on. */
export type KafkaAdapter = "kafkajs" | "@platformatic/kafka";

/** How to reach the brokers: every Kafka sink's and the source's options include these. */
export interface KafkaConnectionOptions extends KafkajsOptions {
  /** The client library the connector runs on. Default "kafkajs". */
  readonly adapter?: KafkaAdapter;
  /** Bootstrap servers (`host:port`); used when no `client` is given. */
  readonly brokers?: readonly string[];
  /** The client id the brokers see. Default "exactly". */
  readonly clientId?: string;
}

/**
 * A connection to the brokers of `options`, not yet connected. `readCommitted`: its fetches and
 * ListOffsets skip open and aborted transactions (the source's).
 */
export function openKafkaConnection(
  options: KafkaConnectionOptions,
  use: { readonly readCommitted?: boolean } = {},
): KafkaConnection {
  const adapter = options.adapter ?? "kafkajs";
  if (adapter === "kafkajs") return openKafkajsConnection(options, use);
  if (adapter !== "@platformatic/kafka") {
    throw new ConfigurationError(
      "adapter",
      `must be "kafkajs" or "@platformatic/kafka", not ${JSON.stringify(adapter)}`,
    );
  }
  if (options.client) {
    throw new ConfigurationError("client", "is a kafkajs client; with the @platformatic/kafka adapter give `brokers`");
  }
  return deferred(async () => {
    const { openPlatformaticConnection } = await import("./platformatic/platformatic-connection.ts");
    return openPlatformaticConnection(options, use);
  });
}

/**
 * A connection whose adapter module is loaded at its first call. Loading @platformatic/kafka
 * takes about 0.6 s and 100 MB of one process here (kafkajs: 0.1 s); every Kafka job and
 * conformance child paid it while kafkajs was the adapter in use.
 */
function deferred(load: () => Promise<KafkaConnection>): KafkaConnection {
  let loading: Promise<KafkaConnection> | undefined;
  const real = () => {
    loading ??= load();
    return loading;
  };
  return {
    connect: async () => (await real()).connect(),
    close: async () => {
      if (loading) await (await loading).close();
    },
    transactionMaxTimeoutMs: async () => (await real()).transactionMaxTimeoutMs(),
    partitions: async (topics) => (await real()).partitions(topics),
    beginTransaction: async (options) => (await real()).beginTransaction(options),
    plainProducer: async (options) => (await real()).plainProducer(options),
    endTransaction: async (handle, commit) => (await real()).endTransaction(handle, commit),
    initProducerId: async (id, timeoutMs) => (await real()).initProducerId(id, timeoutMs),
    listTransactions: async (states) => (await real()).listTransactions(states),
    describeTransaction: async (id) => (await real()).describeTransaction(id),
    listOffsets: async (partitions, at) => (await real()).listOffsets(partitions, at),
    fetchCommitted: async (request) => (await real()).fetchCommitted(request),
    groupOffsets: async (groupId, topics) => (await real()).groupOffsets(groupId, topics),
    commitGroupOffsets: async (groupId, topics) => (await real()).commitGroupOffsets(groupId, topics),
  };
}
