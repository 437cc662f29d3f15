/**
 * Where a `KafkaConnection` comes from: the one file outside an adapter folder that names an
 * adapter. The sinks, the source and the lingering-work finder open their connections here and
 * see only the port (kafka-connection.ts).
 */
import { ConfigurationError } from "@exactly/core";
import type { KafkaConnection } from "./kafka-connection.ts";
import { type KafkajsOptions, openKafkajsConnection } from "./kafkajs/kafkajs-connection.ts";
import { openPlatformaticConnection } from "./platformatic/platformatic-connection.ts";

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
  return openPlatformaticConnection(options, use);
}
