// Kafka: one broker with transactions, for the Kafka source and sinks. EXACTLY_KAFKA_BROKERS,
// else a cp-kafka container, else Apache's jars run by the local launcher.

import { envValue } from "../core/env.ts";
import type { ServiceModule } from "../core/service-module.ts";
import type { KafkaEndpoint } from "./endpoint.ts";

const BROKERS = "EXACTLY_KAFKA_BROKERS";

export const kafka: ServiceModule<KafkaEndpoint, "kafka"> = {
  name: "kafka",
  envHint: BROKERS,
  fromEnv(env) {
    const brokers = envValue(env, BROKERS);
    if (brokers === undefined) return undefined;
    return {
      brokers: brokers
        .split(",")
        .map((b) => b.trim())
        .filter((b) => b !== ""),
    };
  },
  toEnv: (endpoint) => ({ [BROKERS]: endpoint.brokers.join(",") }),
  describe: (endpoint) => endpoint.brokers.join(","),
  startContainer: async () => (await import("./container.ts")).startKafkaContainer(),
  launcher: async () => (await import("./launcher.ts")).kafkaLauncher(kafka),
  probe: async (endpoint) => (await import("./probe.ts")).probeKafka(endpoint),
  restart: { label: "the Kafka broker", commandVariable: "EXACTLY_KAFKA_RESTART_COMMAND", timeoutMs: 180_000 },
};
