/**
 * The Kafka suite's Flink reference: the Kafka bench job (the pre-filled input topic → an
 * exactly-once Kafka sink, 1 s checkpoints) on Flink 2.3's own KafkaSource and KafkaSink in a
 * local MiniCluster, the Java project in test/bench/flink. One case per child process:
 *   node test/bench/cases/flink-cases.ts <case> <records> <dir>
 * The project is built by Maven once per version of its sources, into the machine-wide cache.
 * Records/s is over the job's net runtime (Flink's own figure: the JVM's and the local
 * cluster's start excluded, as the cases exclude their process start); CPU and peak RSS are
 * the JVM's, under GNU time.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildJavaProject } from "@exactly/testkit/java-project";
import kafkajs from "kafkajs";
import { reportResult, runId } from "../bench-protocol.ts";
import { deleteBenchTopics } from "../kafka-input.ts";
import { runTool } from "../tool-process.ts";

const [name, recordsArg, dir] = process.argv.slice(2) as [string, string, string];
const records = Number(recordsArg);
const brokers = (process.env.EXACTLY_KAFKA_BROKERS ?? "").split(",");
const input = process.env.BENCH_KAFKA_INPUT as string;
const project = fileURLToPath(new URL("../flink/", import.meta.url));
const SOURCES = ["pom.xml", "src/main/java/dev/exactly/bench/KafkaReference.java"];

async function flink(parallelism: number): Promise<void> {
  const output = `bench-out-flink-p${parallelism}-${runId(dir)}`;
  const kafka = new kafkajs.Kafka({ clientId: "exactly-bench", brokers, logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: output, numPartitions: 4 }], waitForLeaders: true });
  await admin.disconnect();
  const { java, classpath } = await buildJavaProject(project, SOURCES, "flink-kafka-reference-1.jar");
  const checkpoints = join(dir, "checkpoints");
  await mkdir(checkpoints, { recursive: true });
  const args = ["-Xmx1g", "-cp", classpath, "dev.exactly.bench.KafkaReference"];
  const jobArgs = [brokers.join(","), input, output, String(parallelism), "1000", checkpoints];
  const run = await runTool(java, [...args, ...jobArgs]);
  const runtime = /FLINK_RESULT (\d+)/.exec(run.output);
  if (!runtime) throw new Error(`the Flink reference printed no result: ${run.output.slice(-800)}`);
  reportResult({
    records,
    seconds: Number(runtime[1]) / 1000,
    cpuSeconds: run.cpuSeconds,
    peakRssMb: run.peakRssMb,
    checkpointMs: [],
  });
  await deleteBenchTopics(brokers, [output]);
}

const cases: Record<string, () => Promise<void>> = {
  "Flink 2.3 KafkaSink, exactly-once (1 s), P=1": () => flink(1),
  "Flink 2.3 KafkaSink, exactly-once (1 s), P=2": () => flink(2),
};
const run = cases[name];
if (!run) throw new Error(`unknown case ${name}; cases: ${Object.keys(cases).join(", ")}`);
await run();
