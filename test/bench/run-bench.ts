/**
 * `pnpm bench`: every case of every connector in one run, on the same records, each in
 * its own child process (so CPU and peak RSS are its own), side by side with ratios to the
 * raw-client baseline and to the naive exactly-once loop. Benchmarks are not tests: nothing
 * here asserts.
 *
 *   pnpm bench [--quick] [--only exchange|demo|shards|file|kafka|postgres|redis|redis-cluster|s3] [--rounds R]
 *              [--out DIR] [--records N] [--demo-records N[,N…]] [--kafka-records N] [--pg-records N[,N…]]
 *              [--redis-records N] [--redis-naive-records N] [--redis-cluster-records N] [--s3-mib N]
 *              [--no-recovery] [--case NAME …]
 *   pnpm bench --soak SECONDS [--rate N] [--out DIR]
 *
 * --quick runs every suite on small counts (a couple of minutes for all). A list of
 * record counts runs the suite once per count. With --rounds R every case runs R times, the
 * cases taking turns, so that a slow moment of the machine does not fall on one case only;
 * the table gives medians and ranges. --case (repeatable) runs only the named cases of the
 * chosen suites, with the baselines they are compared with. Each exactly-once case is also run once more, SIGKILLed
 * after its second commit and restarted on its checkpoints: the restart's time to its first
 * commit is its recovery time. The tables go to the terminal and, with the chart, to
 * `--out` (default bench/): results.json, results.md, throughput.svg. --soak runs the demo
 * pipeline instead (see soak.ts).
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { type CaseResult, COMMITTED_LINE, runCaseProcess } from "./bench-protocol.ts";
import {
  type BenchResults,
  formatSuite,
  machine,
  type SuiteSummary,
  summariseSuite,
  writeResults,
} from "./bench-report.ts";
import { deleteBenchTopics, prepareKafkaInput } from "./kafka-input.ts";
import { runSoak } from "./soak.ts";

const { values } = parseArgs({
  options: {
    records: { type: "string" },
    "demo-records": { type: "string" },
    "kafka-records": { type: "string" },
    "pg-records": { type: "string" },
    "redis-records": { type: "string" },
    "redis-naive-records": { type: "string" },
    "redis-cluster-records": { type: "string" },
    "s3-mib": { type: "string" },
    only: { type: "string" },
    case: { type: "string", multiple: true },
    rounds: { type: "string", default: "1" },
    quick: { type: "boolean", default: false },
    "no-recovery": { type: "boolean", default: false },
    out: { type: "string", default: fileURLToPath(new URL("../../bench/", import.meta.url)) },
    soak: { type: "string" },
    rate: { type: "string", default: "20000" },
  },
});
const outDir = values.out as string;
await mkdir(outDir, { recursive: true });
if (values.soak !== undefined) {
  await runSoak({ seconds: positive("--soak", values.soak), ratePerSecond: positive("--rate", values.rate), outDir });
  process.exit(0);
}

function positive(flag: string, value: string | undefined): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} must be a positive integer, got ${value}`);
  return n;
}

/** Counts: the flag's, else --quick's, else the full run's. */
const QUICK = {
  records: "100000",
  demo: "300000",
  kafka: "20000",
  pg: "20000",
  redis: "100000",
  redisNaive: "2000",
  redisCluster: "100000",
  s3: "32",
};
const FULL = {
  records: "1000000",
  demo: "3000000,10000000",
  kafka: "3000000",
  pg: "200000",
  redis: "1000000",
  redisNaive: "20000",
  redisCluster: "1000000",
  s3: "1024",
};
const sizes = values.quick ? QUICK : FULL;
const count = (flag: string | undefined, fallback: string) => flag ?? fallback;
const rounds = positive("--rounds", values.rounds);
const records = positive("--records", count(values.records, sizes.records));
const kafkaRecords = positive("--kafka-records", count(values["kafka-records"], sizes.kafka));
const redisRecords = positive("--redis-records", count(values["redis-records"], sizes.redis));
const redisNaiveRecords = positive("--redis-naive-records", count(values["redis-naive-records"], sizes.redisNaive));
const redisClusterRecords = positive(
  "--redis-cluster-records",
  count(values["redis-cluster-records"], sizes.redisCluster),
);
const s3Mib = positive("--s3-mib", count(values["s3-mib"], sizes.s3));
const kafkaBrokers = (process.env.EXACTLY_KAFKA_BROKERS ?? "").split(",").filter(Boolean);

interface Suite {
  readonly connector: string;
  readonly script: string;
  readonly cases: readonly string[];
  /** The raw-client baseline every case is compared with, unless `rawFor` names another. */
  readonly raw?: string;
  readonly rawFor?: Readonly<Record<string, string>>;
  /** The naive exactly-once loop a user would otherwise write. */
  readonly naive?: string;
  /**
   * The server's own tool doing the same writes (a case of server-tool-cases.ts, listed in
   * `cases`): "× server" of every case is over it, unless `serverFor` names another.
   */
  readonly server?: string;
  readonly serverFor?: Readonly<Record<string, string>>;
  /** Cases run by another script than the suite's (a reference on another runtime). */
  readonly scriptFor?: Readonly<Record<string, string>>;
  /** The exactly-once cases, each also measured for recovery after a SIGKILL. */
  readonly exactlyOnce: readonly string[];
  /** Whether the cases' source can be paced (BENCH_RATE): a generator can, the Kafka input topic cannot. */
  readonly paced: boolean;
  /** Record counts: the suite runs once per count. */
  readonly sizes: readonly number[];
  /**
   * Cases that run on fewer records than the suite's size, and why: a rate that does not
   * depend on the count, and that the full count would take an hour to measure.
   */
  readonly fewerRecords?: Readonly<Record<string, { readonly records: number; readonly why: string }>>;
  /** Prepares input shared by the cases; returns extra environment for them. */
  readonly prepare?: () => Promise<Record<string, string>>;
  /** Removes what `prepare` made, given the environment it returned. */
  readonly cleanUp?: (env: Record<string, string>) => Promise<void>;
  /** Why the suite cannot run here, if it cannot. */
  readonly unavailable?: string;
}

/** The script of every suite's server-tool cases. */
const SERVER_TOOLS = fileURLToPath(new URL("./cases/server-tool-cases.ts", import.meta.url));
const FLINK = fileURLToPath(new URL("./cases/flink-cases.ts", import.meta.url));

const suites: Suite[] = [
  {
    // Not a connector: what a batch costs to cross between worker threads (the multicore issue).
    connector: "exchange (worker threads)",
    script: fileURLToPath(new URL("./cases/exchange-cases.ts", import.meta.url)),
    cases: ["same thread", "json", "structured", "postMessage clone"],
    raw: "same thread",
    exactlyOnce: [],
    paced: false,
    sizes: [records],
  },
  {
    // The multicore issue's measure: the demo job at parallelism 1, 2 and 4, on one event loop
    // and on worker threads; × raw is over P=1, so at P=2 on 2 workers it is the scaling, and
    // for two P=1 processes side by side it is the most P=2 could scale on these cores.
    connector: "demo job (parallelism)",
    script: fileURLToPath(new URL("./cases/demo-cases.ts", import.meta.url)),
    cases: [
      "P=1",
      "P=2, one loop",
      "P=2, 2 workers",
      "P=4, one loop",
      "P=4, 2 workers",
      "bare batched loop",
      "2 processes, P=1 each",
    ],
    raw: "P=1",
    exactlyOnce: [],
    paced: true,
    sizes: count(values["demo-records"], sizes.demo)
      .split(",")
      .map((n) => positive("--demo-records", n)),
  },
  {
    // The job as shards (#39): × raw is over two independent P=1 processes on half the records
    // each, the ceiling here, so for two shards it is what the lease, the checkpoint head and
    // the lane-per-key input leave of it (target ≥ 0.95).
    connector: "shards (demo job)",
    script: fileURLToPath(new URL("./cases/demo-cases.ts", import.meta.url)),
    cases: ["P=1", "1 shard, P=1", "2 processes, P=1 each", "2 shards, P=1 each"],
    raw: "2 processes, P=1 each",
    exactlyOnce: [],
    paced: true,
    sizes: count(values["demo-records"], sizes.demo)
      .split(",")
      .map((n) => positive("--demo-records", n)),
  },
  {
    connector: "file (local disk)",
    script: fileURLToPath(new URL("./cases/file-cases.ts", import.meta.url)),
    cases: ["exactly-once", "at-least-once", "raw", "naive"],
    raw: "raw",
    naive: "naive",
    exactlyOnce: ["exactly-once"],
    paced: true,
    sizes: [records],
  },
  {
    connector: "kafka",
    script: fileURLToPath(new URL("./cases/kafka-cases.ts", import.meta.url)),
    cases: [
      "exactly-once (1 s)",
      "exactly-once (100 ms)",
      "at-least-once",
      "exactly-once (1 s), P=1",
      "exactly-once (1 s), P=2, 2 workers",
      "exactly-once (1 s), P=1, generated input",
      "exactly-once (1 s), 1 shard, P=1",
      "exactly-once (1 s), 2 shards, P=1 each",
      "2 processes, P=1 each",
      "raw",
      "naive",
      "ProducerPerformance, transactional (1 s)",
      "ProducerPerformance, idempotent",
      "Flink 2.3 KafkaSink, exactly-once (1 s), P=1",
      "Flink 2.3 KafkaSink, exactly-once (1 s), P=2",
    ],
    // The same job on Flink: its KafkaSource and KafkaSink at the same checkpoint interval.
    scriptFor: {
      "Flink 2.3 KafkaSink, exactly-once (1 s), P=1": FLINK,
      "Flink 2.3 KafkaSink, exactly-once (1 s), P=2": FLINK,
    },
    raw: "raw",
    // The Java client doing what the sink does: idempotent, acks=all, a transaction a second.
    server: "ProducerPerformance, transactional (1 s)",
    serverFor: {
      raw: "ProducerPerformance, idempotent",
      "at-least-once": "ProducerPerformance, idempotent",
      "ProducerPerformance, idempotent": "ProducerPerformance, idempotent",
    },
    // The shards (#39) against their ceiling here, two independent unsharded P=1 processes on
    // half the records each: × raw is then what the lease, the checkpoint head and the fences
    // leave of that ceiling.
    rawFor: {
      "exactly-once (1 s), 2 shards, P=1 each": "2 processes, P=1 each",
      "2 processes, P=1 each": "2 processes, P=1 each",
    },
    naive: "naive",
    // Its 100 ms checkpoints commit several times even in a short run of the unpaced input.
    exactlyOnce: ["exactly-once (100 ms)"],
    paced: false,
    sizes: [kafkaRecords],
    prepare: async () => {
      const half = Math.ceil(kafkaRecords / 2);
      // The two-process ceiling's inputs: each half of the records, on half the partitions.
      const halves = [
        await prepareKafkaInput(kafkaBrokers, 0, half, 2),
        await prepareKafkaInput(kafkaBrokers, half, kafkaRecords, 2),
      ];
      return {
        BENCH_KAFKA_INPUT: await prepareKafkaInput(kafkaBrokers, 0, kafkaRecords),
        BENCH_KAFKA_INPUT_HALVES: halves.join(","),
      };
    },
    cleanUp: (env) =>
      deleteBenchTopics(
        kafkaBrokers,
        [env.BENCH_KAFKA_INPUT ?? "", ...(env.BENCH_KAFKA_INPUT_HALVES ?? "").split(",")].filter(Boolean),
      ),
    ...(kafkaBrokers.length === 0
      ? {
          unavailable: 'EXACTLY_KAFKA_BROKERS is not set (pnpm services up kafka, then eval "$(pnpm -s services env)")',
        }
      : {}),
  },
  {
    connector: "postgres",
    script: fileURLToPath(new URL("./cases/postgres-cases.ts", import.meta.url)),
    cases: [
      "two-phase append",
      "two-phase upsert",
      "write-ahead append",
      "write-ahead upsert",
      "at-least-once upsert",
      "raw COPY",
      "raw unnest upsert",
      "naive (txn per batch, row by row)",
      "psql \\copy",
    ],
    raw: "raw COPY",
    server: "psql \\copy",
    rawFor: {
      "two-phase upsert": "raw unnest upsert",
      "write-ahead upsert": "raw unnest upsert",
      "at-least-once upsert": "raw unnest upsert",
      "raw unnest upsert": "raw unnest upsert",
    },
    naive: "naive (txn per batch, row by row)",
    exactlyOnce: ["two-phase append", "write-ahead append"],
    paced: true,
    fewerRecords: {
      "naive (txn per batch, row by row)": {
        records: 200_000,
        why: "it writes a statement per row (about 13,000 rows/s here): its rate does not depend on the count, and 5 M rows would take seven minutes",
      },
    },
    sizes: count(values["pg-records"], sizes.pg)
      .split(",")
      .map((n) => {
        const size = Number(n);
        if (!Number.isInteger(size) || size < 1) throw new Error(`--pg-records takes positive integers, got ${n}`);
        return size;
      }),
    ...(process.env.EXACTLY_PG_URL
      ? {}
      : { unavailable: 'EXACTLY_PG_URL is not set (pnpm services up postgres, then eval "$(pnpm -s services env)")' }),
  },
  {
    connector: "redis",
    script: fileURLToPath(new URL("./cases/redis-cases.ts", import.meta.url)),
    cases: [
      "upsert sink (SET)",
      "write-ahead sink (HINCRBY)",
      "at-least-once sink (HINCRBY)",
      "raw pipelined SET",
      "raw pipelined HINCRBY",
      "naive (one awaited SET per record)",
      "guard script alone (server ceiling of the upsert sink)",
      "apply script alone (server ceiling of the write-ahead sink)",
      "redis-benchmark -P 100 SET",
      "redis-benchmark -P 100 HINCRBY",
    ],
    raw: "raw pipelined SET",
    server: "redis-benchmark -P 100 SET",
    serverFor: {
      "write-ahead sink (HINCRBY)": "redis-benchmark -P 100 HINCRBY",
      "apply script alone (server ceiling of the write-ahead sink)": "redis-benchmark -P 100 HINCRBY",
      "at-least-once sink (HINCRBY)": "redis-benchmark -P 100 HINCRBY",
      "raw pipelined HINCRBY": "redis-benchmark -P 100 HINCRBY",
      "redis-benchmark -P 100 HINCRBY": "redis-benchmark -P 100 HINCRBY",
    },
    rawFor: {
      "write-ahead sink (HINCRBY)": "raw pipelined HINCRBY",
      "apply script alone (server ceiling of the write-ahead sink)": "raw pipelined HINCRBY",
      "at-least-once sink (HINCRBY)": "raw pipelined HINCRBY",
      "raw pipelined HINCRBY": "raw pipelined HINCRBY",
    },
    naive: "naive (one awaited SET per record)",
    exactlyOnce: ["upsert sink (SET)", "write-ahead sink (HINCRBY)"],
    paced: true,
    sizes: [redisRecords],
    fewerRecords: {
      "naive (one awaited SET per record)": {
        records: redisNaiveRecords,
        why: "each awaited SET waits for its own fsync (appendfsync always), 1–2 ms here: its rate does not depend on the count",
      },
    },
    ...(process.env.EXACTLY_REDIS_URL
      ? {}
      : { unavailable: 'EXACTLY_REDIS_URL is not set (pnpm services up redis, then eval "$(pnpm -s services env)")' }),
  },
  {
    // The same cases on a Redis Cluster of three masters; "× server" is over the Cluster's own
    // rate summed over its masters (one redis-benchmark per master, at once).
    connector: "redis-cluster",
    script: fileURLToPath(new URL("./cases/redis-cluster-cases.ts", import.meta.url)),
    cases: [
      "upsert sink (SET)",
      "write-ahead sink (HINCRBY)",
      "at-least-once sink (HINCRBY)",
      "raw pipelined SET",
      "raw pipelined HINCRBY",
      "raw pipelined HINCRBY, one slot (the write-ahead sink's keys)",
      "guard script alone, a call per slot (server ceiling of the upsert sink)",
      "apply script alone, one slot (server ceiling of the write-ahead sink)",
      "redis-benchmark -P 100 SET, summed over the masters",
      "redis-benchmark -P 100 HINCRBY, summed over the masters",
    ],
    raw: "raw pipelined SET",
    server: "redis-benchmark -P 100 SET, summed over the masters",
    serverFor: {
      "write-ahead sink (HINCRBY)": "redis-benchmark -P 100 HINCRBY, summed over the masters",
      "at-least-once sink (HINCRBY)": "redis-benchmark -P 100 HINCRBY, summed over the masters",
      "raw pipelined HINCRBY": "redis-benchmark -P 100 HINCRBY, summed over the masters",
      "raw pipelined HINCRBY, one slot (the write-ahead sink's keys)":
        "redis-benchmark -P 100 HINCRBY, summed over the masters",
      "apply script alone, one slot (server ceiling of the write-ahead sink)":
        "redis-benchmark -P 100 HINCRBY, summed over the masters",
      "redis-benchmark -P 100 HINCRBY, summed over the masters":
        "redis-benchmark -P 100 HINCRBY, summed over the masters",
    },
    rawFor: {
      "write-ahead sink (HINCRBY)": "raw pipelined HINCRBY, one slot (the write-ahead sink's keys)",
      "at-least-once sink (HINCRBY)": "raw pipelined HINCRBY",
      "raw pipelined HINCRBY": "raw pipelined HINCRBY",
      "raw pipelined HINCRBY, one slot (the write-ahead sink's keys)":
        "raw pipelined HINCRBY, one slot (the write-ahead sink's keys)",
      "apply script alone, one slot (server ceiling of the write-ahead sink)":
        "raw pipelined HINCRBY, one slot (the write-ahead sink's keys)",
    },
    exactlyOnce: ["upsert sink (SET)", "write-ahead sink (HINCRBY)"],
    paced: true,
    sizes: [redisClusterRecords],
    fewerRecords: {
      "guard script alone, a call per slot (server ceiling of the upsert sink)": {
        records: 1_000_000,
        why: "its calls are encoded in memory before the clock starts (1.7 GB at a million, a call per write): its rate does not depend on the count",
      },
    },
    ...(process.env.EXACTLY_REDIS_CLUSTER_NODES
      ? {}
      : {
          unavailable:
            'EXACTLY_REDIS_CLUSTER_NODES is not set (pnpm services up redis-cluster, then eval "$(pnpm -s services env)")',
        }),
  },
  {
    connector: "s3",
    script: fileURLToPath(new URL("./cases/s3-cases.ts", import.meta.url)),
    cases: [
      "s3 sink, exactly-once",
      "s3 sink, exactly-once, checkpoints on S3",
      "s3 sink, at-least-once",
      "raw SDK multipart upload",
    ],
    raw: "raw SDK multipart upload",
    exactlyOnce: ["s3 sink, exactly-once"],
    paced: true,
    // Lines of about 1,070 bytes: --s3-mib MiB of them.
    sizes: [Math.round((s3Mib * 1024 * 1024) / 1070)],
    ...(process.env.EXACTLY_S3_ENDPOINT
      ? {}
      : { unavailable: 'EXACTLY_S3_ENDPOINT is not set (pnpm services up s3, then eval "$(pnpm -s services env)")' }),
  },
];

function quietNode(script: string, args: readonly string[]) {
  // TimeoutNegativeWarning: kafkajs 2.2.4 on Node 24 (tulios/kafkajs#1751), harmless.
  const quiet = ["--disable-warning=ExperimentalWarning", "--disable-warning=TimeoutNegativeWarning"];
  // The cases load the packages as users run them, from dist (`pnpm bench` builds it first):
  // from source, every process would spend CPU stripping the types of our sources.
  return [process.execPath, [...quiet, script, ...args]] as const;
}

function runCase(
  script: string,
  name: string,
  records: number,
  dir: string,
  env: Record<string, string>,
): Promise<CaseResult> {
  const [node, args] = quietNode(script, [name, String(records), dir]);
  return runCaseProcess(node, args, { ...process.env, ...env }, `case ${name}`);
}

/**
 * Recovery time of an exactly-once case: it runs until its second commit and is SIGKILLed,
 * then runs again on the same checkpoints (and the same table, topic or prefix) to the end;
 * the second process's time from its start to its first commit is the recovery time: start,
 * restore, recommit what the checkpoint pre-committed, abort what lingers, the first new
 * checkpoint (one checkpoint interval) and its commit. A generator is paced to last about
 * six seconds (`pace`), so that the kill falls mid-run.
 */
async function measureRecovery(
  script: string,
  name: string,
  records: number,
  caseEnv: Record<string, string>,
  paced: boolean,
): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "exactly-bench-recovery-"));
  const env = paced ? { ...caseEnv, BENCH_RATE: String(Math.ceil(records / 6)) } : caseEnv;
  try {
    await new Promise<void>((resolve, reject) => {
      const [node, args] = quietNode(script, [name, String(records), dir]);
      const child = spawn(node, args, {
        stdio: ["ignore", "pipe", "inherit"],
        env: { ...process.env, ...env, BENCH_SIGNAL_COMMITS: "1" },
      });
      let commits = 0;
      let out = "";
      child.stdout.on("data", (c) => {
        out += c;
        const lines = out.split("\n");
        out = lines.pop() ?? "";
        commits += lines.filter((l) => l === COMMITTED_LINE).length;
        if (commits >= 2) child.kill("SIGKILL");
      });
      child.on("exit", (_code, signal) => {
        if (signal === "SIGKILL") resolve();
        else reject(new Error(`case ${name} ended before its second commit (${commits}): raise its record count`));
      });
    });
    const resumed = await runCase(script, name, records, dir, { ...env, BENCH_RESUME: "1" });
    if (resumed.firstCommitMs === undefined) throw new Error(`case ${name} reported no commit after its restart`);
    return resumed.firstCommitMs;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const summaries: SuiteSummary[] = [];
const notRun: Array<{ connector: string; why: string }> = [];
for (const suite of suites) {
  // A suite's first word: --only redis is the single server, --only redis-cluster the Cluster.
  if (values.only && suite.connector.split(" ")[0] !== values.only) continue;
  if (suite.unavailable) {
    console.log(`\n${suite.connector}: not run: ${suite.unavailable}`);
    notRun.push({ connector: suite.connector, why: suite.unavailable });
    continue;
  }
  const chosen = chosenCases(suite);
  if (chosen.cases.length === 0) continue;
  const env = (await suite.prepare?.()) ?? {};
  try {
    for (const size of suite.sizes) {
      const summary = await runSuite(chosen, size, env);
      console.log(formatSuite(summary));
      summaries.push(summary);
    }
  } finally {
    await suite.cleanUp?.(env);
  }
}
const results: BenchResults = {
  generatedAt: new Date().toISOString(),
  machine: machine(),
  quick: values.quick === true,
  rounds,
  suites: summaries,
  notRun,
};
for (const path of await writeResults(outDir, results)) console.log(`wrote ${path}`);

/** Whether a case is one of the server tools' (run by server-tool-cases.ts, not the suite's script). */
function isServerTool(suite: Suite, name: string): boolean {
  return name === suite.server || Object.values(suite.serverFor ?? {}).includes(name);
}

/** The suite narrowed to the `--case` names and the baselines they are compared with. */
function chosenCases(suite: Suite): Suite {
  const picked = new Set(values.case ?? []);
  if (picked.size === 0) return suite;
  const named = suite.cases.filter((name) => picked.has(name));
  if (named.length === 0) return { ...suite, cases: [] };
  const baselines = new Set<string>();
  for (const name of named) {
    const raw = suite.rawFor?.[name] ?? suite.raw;
    if (raw) baselines.add(raw);
    const server = suite.serverFor?.[name] ?? suite.server;
    if (server) baselines.add(server);
    if (suite.naive) baselines.add(suite.naive);
  }
  const cases = suite.cases.filter((name) => picked.has(name) || baselines.has(name));
  return { ...suite, cases, exactlyOnce: suite.exactlyOnce.filter((name) => cases.includes(name)) };
}

async function runSuite(suite: Suite, size: number, env: Record<string, string>): Promise<SuiteSummary> {
  const results = new Map<string, CaseResult[]>(suite.cases.map((name) => [name, []]));
  const recordsOf = (name: string) => Math.min(size, suite.fewerRecords?.[name]?.records ?? size);
  for (let round = 1; round <= rounds; round++) {
    // Every other round runs the cases in reverse, so no case always follows the same one
    // (a broker still flushing the previous case's output slows whichever case comes next).
    const order = round % 2 === 1 ? suite.cases : [...suite.cases].reverse();
    for (const name of order) {
      const dir = await mkdtemp(join(tmpdir(), "exactly-bench-"));
      process.stderr.write(`${suite.connector}: ${name}${rounds > 1 ? ` (round ${round} of ${rounds})` : ""} …\n`);
      const script = suite.scriptFor?.[name] ?? (isServerTool(suite, name) ? SERVER_TOOLS : suite.script);
      results.get(name)?.push(await runCase(script, name, recordsOf(name), dir, env));
      await rm(dir, { recursive: true, force: true });
    }
  }
  const recovery = new Map<string, number>();
  if (!values["no-recovery"]) {
    for (const name of suite.exactlyOnce) {
      process.stderr.write(`${suite.connector}: ${name}, SIGKILLed and restarted …\n`);
      recovery.set(name, await measureRecovery(suite.script, name, recordsOf(name), env, suite.paced));
    }
  }
  const notes = Object.entries(suite.fewerRecords ?? {})
    .filter(([, { records }]) => records < size)
    .map(([name, { records, why }]) => `${name}: ${records.toLocaleString("en-US")} records, as ${why}`);
  return summariseSuite(suite, size, results, recovery, notes);
}
