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
import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildJavaProject } from "@exactly/testkit/java-project";
import kafkajs from "kafkajs";
import { reportResult, runId } from "../bench-protocol.ts";

const [name, recordsArg, dir] = process.argv.slice(2) as [string, string, string];
const records = Number(recordsArg);
const brokers = (process.env.EXACTLY_KAFKA_BROKERS ?? "").split(",");
const input = process.env.BENCH_KAFKA_INPUT as string;
const project = fileURLToPath(new URL("../flink/", import.meta.url));
const SOURCES = ["pom.xml", "src/main/java/dev/exactly/bench/KafkaReference.java"];

interface Exit {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function exec(command: string, args: readonly string[], cwd?: string): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => {
      stdout += c;
    });
    child.stderr.on("data", (c) => {
      stderr += c;
    });
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

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
  const timeFormat = "BENCH_TOOL_TIME %U %S %M";
  const result = await exec("/usr/bin/time", ["-f", timeFormat, java, ...args, ...jobArgs]);
  const runtime = /FLINK_RESULT (\d+)/.exec(result.stdout);
  const timing = result.stderr.split("\n").find((l) => l.startsWith("BENCH_TOOL_TIME"));
  if (result.code !== 0 || !runtime || !timing) {
    throw new Error(`the Flink reference ended with code ${result.code}: ${result.stderr.slice(-800)}`);
  }
  const [user, system, maxKb] = timing.split(" ").slice(1).map(Number) as [number, number, number];
  await writeFile(join(dir, "flink.out"), result.stdout);
  reportResult({
    records,
    seconds: Number(runtime[1]) / 1000,
    cpuSeconds: user + system,
    peakRssMb: Math.round(maxKb / 1024),
    checkpointMs: [],
  });
}

const cases: Record<string, () => Promise<void>> = {
  "Flink 2.3 KafkaSink, exactly-once (1 s), P=1": () => flink(1),
  "Flink 2.3 KafkaSink, exactly-once (1 s), P=2": () => flink(2),
};
const run = cases[name];
if (!run) throw new Error(`unknown case ${name}; cases: ${Object.keys(cases).join(", ")}`);
await run();
