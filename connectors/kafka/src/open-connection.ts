/**
 * Where a `KafkaConnection` comes from: the one file outside an adapter folder that names an
 * adapter. The sinks, the source and the lingering-work finder open their connections here and
 * see only the port (kafka-connection.ts).
 */
import type { KafkaConnection } from "./kafka-connection.ts";
import { type KafkajsOptions, openKafkajsConnection } from "./kafkajs/kafkajs-connection.ts";

/** How to reach the brokers: every Kafka sink's and the source's options include these. */
export interface KafkaConnectionOptions extends KafkajsOptions {
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
  return openKafkajsConnection(options, use);
}
