/**
 * The servers' own tools doing the writes the connectors' cases do, on the same server: the
 * reference each case's "× server" is over. One case per child process:
 *   node test/bench/cases/server-tool-cases.ts <case> <records> <dir>
 * Each tool runs under GNU time, so CPU seconds and peak RSS are the tool's own. Records/s is
 * the tool's own figure where it prints one (redis-benchmark, ProducerPerformance), else the
 * tool process's wall time (psql).
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { kafkaTools } from "@exactly/testkit/kafka/tools";
import { Redis } from "ioredis";
import kafkajs from "kafkajs";
import pg from "pg";
import { benchRecord, reportResult, runId } from "../bench-protocol.ts";
import { deleteBenchTopics } from "../kafka-input.ts";
import { runTool, type ToolRun } from "../tool-process.ts";
import { unlinkMatching } from "./redis-bench-writes.ts";

const [name, recordsArg, dir] = process.argv.slice(2) as [string, string, string];
const records = Number(recordsArg);
const id = runId(dir);

function reportTool(run: ToolRun, recordsPerSecond?: number): void {
  reportResult({
    records,
    seconds: recordsPerSecond ? records / recordsPerSecond : run.seconds,
    cpuSeconds: run.cpuSeconds,
    peakRssMb: run.peakRssMb,
    checkpointMs: [],
  });
}

/** Host and port of the Redis URL; a password is refused, as redis-benchmark takes one only on its command line. */
function redisServer(): { host: string; port: string } {
  const url = new URL(process.env.EXACTLY_REDIS_URL as string);
  if (url.password) {
    throw new Error(
      "redis-benchmark takes a password only on its command line, where other users of the machine can read it: not run against a server with one",
    );
  }
  return { host: url.hostname, port: url.port || "6379" };
}

/**
 * `redis-benchmark -P 100` of one command (`__rand_int__` in it is a random number below
 * `keyspace`) under a prefix of this run, deleted afterwards; its own requests/s.
 */
async function redisBenchmark(keyspace: number, command: (prefix: string) => string[]): Promise<void> {
  const { host, port } = redisServer();
  const prefix = `bench:server-tool:${id}:`;
  const args = ["-h", host, "-p", port, "-P", "100", "-n", String(records), "-r", String(keyspace), "--csv"];
  const run = await runTool("redis-benchmark", [...args, ...command(prefix)]);
  // --csv: a header, then "<command>","<requests per second>",…
  const line = run.output.split("\n").find((l) => /^"[^"]+","[\d.]+"/.test(l));
  if (!line) throw new Error(`redis-benchmark printed no result: ${run.output.slice(-300)}`);
  reportTool(run, Number(line.split(",")[1]?.replaceAll('"', "")));
  const client = new Redis(process.env.EXACTLY_REDIS_URL as string);
  try {
    await unlinkMatching(client, `${prefix}*`);
  } finally {
    client.disconnect();
  }
}

/** A master of the Cluster, and a hash tag (`{…}`) of a slot it serves. */
interface ClusterMaster {
  readonly host: string;
  readonly port: string;
  readonly tag: string;
}

/**
 * The masters of the Cluster of EXACTLY_REDIS_CLUSTER_NODES (CLUSTER SLOTS from its first node),
 * each with a hash tag of one of its slots: the first of `{0}`, `{1}`, … that CLUSTER KEYSLOT
 * puts in a slot the master serves.
 */
async function clusterMasters(): Promise<ClusterMaster[]> {
  const [first] = (process.env.EXACTLY_REDIS_CLUSTER_NODES as string).split(",");
  const client = new Redis(`redis://${first}`);
  try {
    const masters = new Map<string, { host: string; port: string; ranges: [number, number][] }>();
    // Each range: its first and last slot, then its master (host, port, id), then its replicas.
    for (const [from, to, served] of await client.cluster("SLOTS")) {
      if (!served) continue;
      const [host, port] = served;
      const node = `${host}:${port}`;
      const master = masters.get(node) ?? { host, port: String(port), ranges: [] };
      master.ranges.push([from, to]);
      masters.set(node, master);
    }
    const tagged: ClusterMaster[] = [];
    for (const { host, port, ranges: served } of masters.values()) {
      for (let i = 0; ; i++) {
        const slot = Number(await client.cluster("KEYSLOT", `{${i}}`));
        if (served.some(([from, to]) => slot >= from && slot <= to)) {
          tagged.push({ host, port, tag: `{${i}}` });
          break;
        }
      }
    }
    return tagged;
  } finally {
    client.disconnect();
  }
}

/**
 * The Cluster's own rate, summed over its masters: one `redis-benchmark -P 100` per master, all
 * at once, each on a third of the records and of the key space, under a hash tag of that master
 * (its keys all in one of its slots), then deleted; the rate is all the records over the time
 * from the first one's start to the last one's end (not the sum of their own figures, which
 * would count a moment one ran alone as if all had), CPU and peak RSS summed over them.
 * Not `redis-benchmark --cluster`: it refuses a command of ours (the first MOVED reply ends it),
 * so it could give SET but not HINCRBY, and it drives every master from one client thread (SET
 * with it ran at about 0.75× of this sum here), which would measure the client, not the Cluster.
 */
async function redisBenchmarkCluster(keyspace: number, command: (prefix: string) => string[]): Promise<void> {
  const masters = await clusterMasters();
  const share = Math.ceil(records / masters.length);
  const prefixOf = (master: ClusterMaster) => `bench:server-tool:${master.tag}:${id}:`;
  try {
    const started = performance.now();
    const runs = await Promise.all(
      masters.map(async (master) => {
        const args = ["-h", master.host, "-p", master.port, "-P", "100", "-n", String(share), "--csv"];
        const range = ["-r", String(Math.ceil(keyspace / masters.length))];
        const run = await runTool("redis-benchmark", [...args, ...range, ...command(prefixOf(master))]);
        if (!/^"[^"]+","[\d.]+"/m.test(run.output))
          throw new Error(`redis-benchmark printed no result: ${run.output.slice(-300)}`);
        return run;
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    reportResult({
      records: share * masters.length,
      seconds,
      cpuSeconds: runs.reduce((sum, r) => sum + r.cpuSeconds, 0),
      peakRssMb: runs.reduce((sum, r) => sum + r.peakRssMb, 0),
      checkpointMs: [],
    });
  } finally {
    await Promise.allSettled(masters.map((master) => unlinkOnMaster(master, `${prefixOf(master)}*`)));
  }
}

/** Deletes a master's keys matching `pattern`. */
async function unlinkOnMaster(master: ClusterMaster, pattern: string): Promise<void> {
  const client = new Redis(`redis://${master.host}:${master.port}`);
  try {
    await unlinkMatching(client, pattern);
  } finally {
    client.disconnect();
  }
}

/**
 * Apache Kafka's ProducerPerformance (the broker's version, on Java) with the records of the
 * Kafka cases as its payloads, into a topic of the cases' four partitions, `acks=all` and
 * idempotence on; transactional with a commit every second (`--transaction-duration-ms`), as
 * the exactly-once sink at 1 s checkpoints, or not.
 */
async function producerPerformance(transactional: boolean): Promise<void> {
  const brokers = (process.env.EXACTLY_KAFKA_BROKERS ?? "").split(",");
  const topic = `bench-out-producer-performance-${id}`;
  const kafka = new kafkajs.Kafka({ clientId: "exactly-bench", brokers, logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 4 }], waitForLeaders: true });
  await admin.disconnect();
  const payloads = join(dir, "payloads.txt");
  const lines: string[] = [];
  for (let i = 0; i < Math.min(records, 100_000); i++) lines.push(JSON.stringify(benchRecord(i)));
  await writeFile(payloads, `${lines.join("\n")}\n`);
  const tools = await kafkaTools();
  const run = await runTool(tools.java, [
    "-Xmx512m",
    "-cp",
    tools.classpath,
    "org.apache.kafka.tools.ProducerPerformance",
    "--topic",
    topic,
    "--num-records",
    String(records),
    "--payload-file",
    payloads,
    "--payload-delimiter",
    "\n",
    "--throughput",
    "-1",
    ...(transactional ? ["--transactional-id", topic, "--transaction-duration-ms", "1000"] : []),
    "--producer-props",
    `bootstrap.servers=${brokers.join(",")}`,
    "acks=all",
    "enable.idempotence=true",
  ]);
  // "<n> records sent, <rate> records/sec (…)", its summary line.
  const summary = /(\d+) records sent, ([\d.]+) records\/sec/.exec(run.output);
  if (!summary) throw new Error(`ProducerPerformance printed no summary: ${run.output.slice(-300)}`);
  reportTool(run, Number(summary[2]));
  await deleteBenchTopics(brokers, [topic]);
}

/**
 * psql's `\copy` of the rows the Postgres cases write, from a file made before the clock
 * starts, into a fresh table of the cases' shape. The connection comes from the environment
 * (PGHOST, PGPASSWORD …), never the command line.
 */
async function psqlCopy(): Promise<void> {
  const url = new URL(process.env.EXACTLY_PG_URL as string);
  const table = `bench_psql_copy_${id}`;
  const client = new pg.Client({ connectionString: url.href });
  await client.connect();
  try {
    await client.query(`CREATE TABLE "${table}" (id bigint NOT NULL, key integer NOT NULL, payload text)`);
    const file = join(dir, "rows.tsv");
    const rows: string[] = [];
    for (let i = 0; i < records; i++) {
      const r = benchRecord(i);
      rows.push(`${r.id}\t${r.key}\t${r.payload}\n`);
    }
    await writeFile(file, rows.join(""));
    const env = {
      ...process.env,
      PGHOST: url.hostname,
      PGPORT: url.port || "5432",
      PGUSER: decodeURIComponent(url.username),
      PGPASSWORD: decodeURIComponent(url.password),
      PGDATABASE: decodeURIComponent(url.pathname.slice(1)),
    };
    // The file name is ours (the bench's temporary directory), quoted for psql's \copy.
    const copy = `\\copy "${table}" (id, key, payload) from '${file.replaceAll("'", "''")}'`;
    reportTool(await runTool("psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", copy], env));
  } finally {
    await client.query(`DROP TABLE IF EXISTS "${table}"`);
    await client.end();
  }
}

const cases: Record<string, () => Promise<void>> = {
  "redis-benchmark -P 100 SET": () =>
    // The upsert cases' keys (100,000) and values (the records' payloads, about 12 bytes).
    redisBenchmark(100_000, (prefix) => ["SET", `${prefix}__rand_int__`, "value-123456"]),
  "redis-benchmark -P 100 HINCRBY": () =>
    // Hashes of up to 100 fields each, like the increment cases' 1,000 hashes of 100 fields.
    redisBenchmark(100, (prefix) => ["HINCRBY", `${prefix}counts:__rand_int__`, "f__rand_int__", "1"]),
  "redis-benchmark -P 100 SET, summed over the masters": () =>
    redisBenchmarkCluster(100_000, (prefix) => ["SET", `${prefix}__rand_int__`, "value-123456"]),
  "redis-benchmark -P 100 HINCRBY, summed over the masters": () =>
    // Hashes of up to 100 fields each on every master, as on the single server.
    redisBenchmarkCluster(300, (prefix) => ["HINCRBY", `${prefix}counts:__rand_int__`, "f__rand_int__", "1"]),
  "ProducerPerformance, transactional (1 s)": () => producerPerformance(true),
  "ProducerPerformance, idempotent": () => producerPerformance(false),
  "psql \\copy": psqlCopy,
};
const run = cases[name];
if (!run) throw new Error(`unknown case ${name}; cases: ${Object.keys(cases).join(", ")}`);
await run();
