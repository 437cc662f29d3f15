// Step 2 for Kafka: Confluent's image in KRaft mode, set up for transactions on one broker.

import { KafkaContainer } from "@testcontainers/kafka";
import { serviceContainer } from "../core/container.ts";
import type { ServiceContainer } from "../core/service-module.ts";
import type { KafkaEndpoint } from "./endpoint.ts";

// Confluent Platform 8.0 is Apache Kafka 4.0; tags >= 8 run in KRaft mode.
const KAFKA_IMAGE = "confluentinc/cp-kafka:8.0.0";

export async function startKafkaContainer(): Promise<ServiceContainer<KafkaEndpoint>> {
  const container = await new KafkaContainer(KAFKA_IMAGE)
    .withKraft()
    // The module sets the offsets topic and min ISR for one broker but not the replication of
    // the transaction state topic, which defaults to 3: every transaction would then wait for
    // replicas that do not exist.
    .withEnvironment({
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: "1",
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: "1",
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: "1",
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: "0",
    })
    .start();
  // 9093 is the module's listener advertised to the host.
  return serviceContainer(container, { brokers: [`${container.getHost()}:${container.getMappedPort(9093)}`] });
}
