/**
 * What the Kafka connector checks against the brokers before it writes (I7): the exactly-once
 * sink's transaction timeout must not exceed the brokers' `transaction.max.timeout.ms`, or
 * InitProducerId is refused. The checks that need no broker are in `options.ts`.
 */
import { ConfigurationError } from "@exactly/core";
import type { KafkaConnection } from "./kafka-connection.ts";

/** Reads the brokers' `transaction.max.timeout.ms` (DescribeConfigs) and refuses a timeout above it. */
export async function checkTransactionTimeoutAgainstBroker(
  connection: KafkaConnection,
  transactionTimeoutMs: number,
): Promise<number> {
  const maximum = await connection.transactionMaxTimeoutMs();
  if (maximum === undefined) {
    throw new ConfigurationError(
      "transactionTimeoutMs",
      "could not read the broker's transaction.max.timeout.ms (DescribeConfigs) to validate the timeout",
    );
  }
  if (transactionTimeoutMs > maximum) {
    throw new ConfigurationError(
      "transactionTimeoutMs",
      `${transactionTimeoutMs} ms is above the broker's transaction.max.timeout.ms (${maximum} ms): ` +
        "InitProducerId would be refused; lower transactionTimeoutMs or raise transaction.max.timeout.ms",
    );
  }
  return maximum;
}
