/**
 * Where a `KafkaConnection` comes from: the one file outside the adapter folder that names the
 * client. The sinks, the source and the lingering-work finder open their connections here and
 * see only the port (kafka-connection.ts).
 */
import type { ConnectionOptions as TlsOptions } from "node:tls";
import type { KafkaConnection } from "./kafka-connection.ts";
import type { KafkaCompression } from "./options.ts";

/** A credential, or a function that answers it at each authentication (rotated secrets). */
export type KafkaCredential = string | (() => string | Promise<string>);

/** SASL authentication on every broker connection. */
export interface KafkaSaslOptions {
  readonly mechanism: "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512" | "OAUTHBEARER";
  readonly username?: KafkaCredential;
  readonly password?: KafkaCredential;
  /** The bearer token of OAUTHBEARER. */
  readonly token?: KafkaCredential;
}

/** How to reach the brokers: every Kafka sink's and the source's options include these. */
export interface KafkaConnectionOptions {
  /** Bootstrap servers (`host:port`). */
  readonly brokers?: readonly string[];
  /** The client id the brokers see. Default "exactly". */
  readonly clientId?: string;
  /** SASL on every connection (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER). Its secrets are never logged. */
  readonly sasl?: KafkaSaslOptions;
  /** TLS on every connection: `true` for the system's CAs, or Node's `tls.connect` options (ca, cert, key, servername). */
  readonly tls?: true | TlsOptions;
}

/** What one connection is for, besides where it connects. */
export interface KafkaConnectionUse {
  /** Its fetches and ListOffsets skip open and aborted transactions (the source's). */
  readonly readCommitted?: boolean;
  /** The codec of the record batches its producers send (a sink's). Default none. */
  readonly compression?: KafkaCompression | undefined;
}

/** A connection to the brokers of `options`, not yet connected. */
export function openKafkaConnection(options: KafkaConnectionOptions, use: KafkaConnectionUse = {}): KafkaConnection {
  return deferred(async () => {
    const { openPlatformaticConnection } = await import("./platformatic/platformatic-connection.ts");
    return openPlatformaticConnection(options, use);
  });
}

/**
 * A connection whose client module is loaded at its first call. Loading @platformatic/kafka
 * takes about 0.6 s and 100 MB of one process here: a process that imports the connector but
 * never reaches a broker (a CLI command, a job whose Kafka sink is not in this shard) does not
 * pay it.
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
    ensureTopic: async (request) => (await real()).ensureTopic(request),
    deleteRecordsBefore: async (topic, offsets) => (await real()).deleteRecordsBefore(topic, offsets),
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
