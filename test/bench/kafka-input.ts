import { randomUUID } from "node:crypto";
import kafkajs from "kafkajs";
import { benchRecord } from "./bench-protocol.ts";

/**
 * Deletes topics a case or suite made, once their records are measured: a broker holding
 * every earlier run's topics starts, restarts and answers metadata requests ever slower.
 */
export async function deleteBenchTopics(brokers: string[], topics: string[]): Promise<void> {
  const kafka = new kafkajs.Kafka({ clientId: "exactly-bench-cleanup", brokers, logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics });
  } finally {
    await admin.disconnect();
  }
}

/**
 * Fills a fresh input topic with the benchmark's records `from` up to `to`, once, before the
 * Kafka cases run.
 */
export async function prepareKafkaInput(brokers: string[], from: number, to: number, partitions = 4): Promise<string> {
  const kafka = new kafkajs.Kafka({ clientId: "exactly-bench-input", brokers, logLevel: kafkajs.logLevel.NOTHING });
  const topic = `bench-in-${randomUUID().slice(0, 8)}`;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  for (let start = from; start < to; start += 10_000) {
    const messages = [];
    for (let id = start; id < Math.min(to, start + 10_000); id++)
      messages.push({ value: JSON.stringify(benchRecord(id)) });
    await producer.send({ topic, acks: -1, messages });
  }
  await producer.disconnect();
  return topic;
}
