/** The two readers that check the output: ours, and one that is not kafkajs. */
import { spawnSync } from "node:child_process";
import { KafkaSource, valueAsString } from "@exactly/kafka";
import type { Kafka } from "kafkajs";

/** Every committed value of `topic`, read with the connector's own read_committed source. */
export async function readCommittedValues(kafka: Kafka, topic: string): Promise<string[]> {
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

/**
 * Every committed value of `topic`, read by kcat (librdkafka) with
 * `isolation.level=read_committed`; or why kcat could not be asked.
 */
export function readCommittedWithKcat(brokers: readonly string[], topic: string): string[] | string {
  const args = ["-b", brokers.join(","), "-C", "-t", topic, "-e", "-q", "-o", "beginning"];
  args.push("-X", "isolation.level=read_committed", "-f", "%s\\n");
  const result = spawnSync("kcat", args, { encoding: "utf8", timeout: 60_000 });
  if (result.error) return `kcat could not run: ${result.error.message} (apt-get install kcat)`;
  if (result.status !== 0) return `kcat exited with ${result.status}: ${result.stderr}`;
  return result.stdout.split("\n").filter((line) => line.length > 0);
}
