// Kafka is healthy when a transaction commits and a consumer group's offsets can be read: the
// sinks need the transaction coordinator, which answers only once the transaction state topic
// exists, and the sources commit offsets to a group, whose coordinator answers only once the
// broker has created and loaded the offsets topic (lazily, on the first group request: a test
// that came first would meet NOT_COORDINATOR on a fresh broker).

import kafkajs from "kafkajs";
import type { KafkaEndpoint } from "./endpoint.ts";

const PROBE_TOPIC = "__exactly_services_probe";
// One fixed transactional id: each probe fences the previous one, so a probe killed halfway
// leaves no open transaction behind for longer than the next probe.
const PROBE_TRANSACTIONAL_ID = "exactly-services-probe";
const PROBE_GROUP = "exactly-services-probe";

export async function probeKafka(endpoint: KafkaEndpoint): Promise<string> {
  const kafka = new kafkajs.Kafka({
    clientId: "exactly-services-probe",
    brokers: endpoint.brokers,
    logLevel: kafkajs.logLevel.NOTHING,
    connectionTimeout: 3_000,
    retry: { retries: 3 },
  });
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({
      topics: [{ topic: PROBE_TOPIC, numPartitions: 1, replicationFactor: 1 }],
      waitForLeaders: true,
    });
  } finally {
    await admin.disconnect();
  }
  const producer = kafka.producer({
    transactionalId: PROBE_TRANSACTIONAL_ID,
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await producer.connect();
  try {
    const transaction = await producer.transaction();
    try {
      await transaction.send({ topic: PROBE_TOPIC, messages: [{ value: new Date().toISOString() }] });
      await transaction.commit();
    } catch (error) {
      await transaction.abort().catch(() => undefined);
      throw error;
    }
  } finally {
    await producer.disconnect();
  }
  const groups = kafka.admin();
  await groups.connect();
  try {
    await groups.fetchOffsets({ groupId: PROBE_GROUP, topics: [PROBE_TOPIC] });
  } finally {
    await groups.disconnect();
  }
  return "transactional produce committed, group offsets readable";
}
