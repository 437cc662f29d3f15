// Kafka: one broker with transactions, for the Kafka source and sinks. EXACTLY_KAFKA_BROKERS,
// else a cp-kafka container, else Apache's jars run by the local launcher.

import { envValue } from "../core/env.ts";
import type { ServiceModule } from "../core/service-module.ts";
import type { KafkaEndpoint } from "./endpoint.ts";

const BROKERS = "EXACTLY_KAFKA_BROKERS";
const PROXIED = "EXACTLY_KAFKA_PROXIED_LISTENER";
const SCRAM = "EXACTLY_KAFKA_SCRAM_BROKERS";

const list = (value: string) =>
  value
    .split(",")
    .map((b) => b.trim())
    .filter((b) => b !== "");

export const kafka: ServiceModule<KafkaEndpoint, "kafka"> = {
  name: "kafka",
  envHint: BROKERS,
  fromEnv(env) {
    const brokers = envValue(env, BROKERS);
    if (brokers === undefined) return undefined;
    // `advertised->upstream`
    const [advertised, upstream] = (envValue(env, PROXIED) ?? "").split("->");
    const scram = envValue(env, SCRAM);
    return {
      brokers: list(brokers),
      ...(advertised && upstream ? { proxied: { advertised, upstream } } : {}),
      ...(scram ? { scramBrokers: list(scram) } : {}),
    };
  },
  toEnv: (endpoint) => ({
    [BROKERS]: endpoint.brokers.join(","),
    ...(endpoint.proxied ? { [PROXIED]: `${endpoint.proxied.advertised}->${endpoint.proxied.upstream}` } : {}),
    ...(endpoint.scramBrokers ? { [SCRAM]: endpoint.scramBrokers.join(",") } : {}),
  }),
  describe: (endpoint) => endpoint.brokers.join(","),
  startContainer: async () => (await import("./container.ts")).startKafkaContainer(),
  launcher: async () => (await import("./launcher.ts")).kafkaLauncher(kafka),
  probe: async (endpoint) => (await import("./probe.ts")).probeKafka(endpoint),
  restart: { label: "the Kafka broker", commandVariable: "EXACTLY_KAFKA_RESTART_COMMAND", timeoutMs: 180_000 },
};
