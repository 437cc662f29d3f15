// Apache Kafka's own command-line tools (the `kafka-tools` artifact of the broker's version),
// for the benchmark's reference figures: `ProducerPerformance` is the Java client doing what
// the Kafka sink does. Resolved from Maven Central into the machine-wide cache once, beside
// the broker's jars and apart from them, so a broker install made before it stays valid.

import { join } from "node:path";
import { ensureJava, resolveJars } from "../core/java.ts";
import { cacheDir, logFile } from "../core/paths.ts";
import type { Progress } from "../core/proc.ts";
import { KAFKA_VERSION, kafkaPom } from "./launcher.ts";

const toolsDir = join(cacheDir, `kafka-tools-${KAFKA_VERSION}`);

/** A Java 17+ runtime and the classpath of Kafka's tools, resolved on first use. */
export interface KafkaTools {
  readonly java: string;
  readonly classpath: string;
  readonly version: string;
}

export async function kafkaTools(progress: Progress = () => {}): Promise<KafkaTools> {
  const log = logFile("kafka-tools");
  const java = await ensureJava(log, progress);
  const libs = await resolveJars(kafkaPom("kafka-tools"), toolsDir, `kafka-tools-${KAFKA_VERSION}`, log, progress);
  return { java, classpath: `${libs}/*`, version: KAFKA_VERSION };
}
