import { KafkaSource, valueAsString } from "@exactly/kafka";
import type { Kafka } from "kafkajs";

/** Every committed value of `topic`, read with the connector's own read_committed source. */
export async function readCommittedValues(kafka: Kafka, topic: string, _partitions: number): Promise<string[]> {
  const source = new KafkaSource({ client: kafka, topics: [topic], stopAtLatest: true, deserializer: valueAsString });
  const reader = source.createReader({ subtask: 0, parallelism: 1, restoredPositions: undefined });
  await reader.open?.();
  const values: string[] = [];
  try {
    for (let batch = await reader.poll(1000); batch !== null; batch = await reader.poll(1000)) {
      for (const value of batch.values) if (value !== null) values.push(value);
    }
  } finally {
    await reader.close?.();
  }
  return values;
}
