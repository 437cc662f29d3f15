/**
 * `pnpm bench`: every case of every connector in one run, on the same records, each in
 * its own child process (so CPU and peak RSS are its own), printed side by side with
 * ratios to the exactly-once case. Benchmarks are not tests: nothing here asserts.
 *
 *   pnpm bench [--records N] [--kafka-records N] [--pg-records N[,N…]] [--redis-records N] [--redis-naive-records N]
 *              [--s3-mib N] [--only file|kafka|postgres|redis|s3] [--rounds R]
 *
 * A list of record counts runs the suite once per count, each with its own table. Below each
 * table, a suite's comparisons give the ratios its issue sets targets for (a sink against the
 * raw client on the same bulk path, and against the naive loop).
 *
 * With --rounds R every case runs R times, the cases taking turns (a round runs each once),
 * so that a slow moment of the machine or the broker does not fall on one case only; the
 * table gives each case's median and its range.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { type CaseResult, RESULT_PREFIX } from "./bench-protocol.ts";
import { prepareKafkaInput } from "./kafka-input.ts";

const { values } = parseArgs({
  options: {
    records: { type: "string", default: "1000000" },
    "kafka-records": { type: "string", default: "200000" },
    "pg-records": { type: "string", default: "200000" },
    "redis-records": { type: "string", default: "1000000" },
    "redis-naive-records": { type: "string", default: "20000" },
    "s3-mib": { type: "string", default: "1024" },
    only: { type: "string" },
    rounds: { type: "string", default: "1" },
  },
});
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 1)
  throw new Error(`--rounds must be a positive integer, got ${values.rounds}`);
const records = Number(values.records);
const kafkaBrokers = (process.env.EXACTLY_KAFKA_BROKERS ?? "").split(",").filter(Boolean);

interface Suite {
  readonly connector: string;
  readonly script: string;
  readonly cases: readonly string[];
  /** Record counts: the suite runs once per count. */
  readonly sizes: readonly number[];
  /** `[case, baseline]`: printed as the case's records/s over the baseline's. */
  readonly comparisons?: ReadonlyArray<readonly [string, string]>;
  /**
   * Cases that run on fewer records than the suite's size, and why: a rate that does not
   * depend on the count, and that the full count would take an hour to measure.
   */
  readonly fewerRecords?: Readonly<Record<string, { readonly records: number; readonly why: string }>>;
  /** Prepares input shared by the cases; returns extra environment for them. */
  readonly prepare?: () => Promise<Record<string, string>>;
  /** Why the suite cannot run here, if it cannot. */
  readonly unavailable?: string;
}

const suites: Suite[] = [
  {
    connector: "file (local disk)",
    script: fileURLToPath(new URL("./cases/file-cases.ts", import.meta.url)),
    cases: ["exactly-once", "at-least-once", "raw", "naive"],
    sizes: [records],
  },
  {
    connector: "kafka",
    script: fileURLToPath(new URL("./cases/kafka-cases.ts", import.meta.url)),
    cases: ["exactly-once (1 s)", "exactly-once (100 ms)", "at-least-once", "raw", "naive"],
    sizes: [Number(values["kafka-records"])],
    prepare: async () => ({
      BENCH_KAFKA_INPUT: await prepareKafkaInput(kafkaBrokers, Number(values["kafka-records"])),
    }),
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
    ],
    sizes: (values["pg-records"] as string).split(",").map((n) => {
      const size = Number(n);
      if (!Number.isInteger(size) || size < 1) throw new Error(`--pg-records takes positive integers, got ${n}`);
      return size;
    }),
    comparisons: [
      ["two-phase append", "raw COPY"],
      ["write-ahead append", "raw COPY"],
      ["two-phase upsert", "raw unnest upsert"],
      ["write-ahead upsert", "raw unnest upsert"],
      ["two-phase upsert", "naive (txn per batch, row by row)"],
      ["write-ahead upsert", "naive (txn per batch, row by row)"],
    ],
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
    ],
    sizes: [Number(values["redis-records"])],
    fewerRecords: {
      "naive (one awaited SET per record)": {
        records: Number(values["redis-naive-records"]),
        why: "each awaited SET waits for its own fsync (appendfsync always), 1–2 ms here: its rate does not depend on the count",
      },
    },
    comparisons: [
      ["upsert sink (SET)", "raw pipelined SET"],
      ["write-ahead sink (HINCRBY)", "raw pipelined HINCRBY"],
      ["upsert sink (SET)", "naive (one awaited SET per record)"],
      ["write-ahead sink (HINCRBY)", "naive (one awaited SET per record)"],
    ],
    ...(process.env.EXACTLY_REDIS_URL
      ? {}
      : { unavailable: 'EXACTLY_REDIS_URL is not set (pnpm services up redis, then eval "$(pnpm -s services env)")' }),
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
    // Lines of about 1,070 bytes: --s3-mib MiB of them.
    sizes: [Math.round((Number(values["s3-mib"]) * 1024 * 1024) / 1070)],
    comparisons: [
      ["s3 sink, exactly-once", "raw SDK multipart upload"],
      ["s3 sink, at-least-once", "raw SDK multipart upload"],
      ["s3 sink, exactly-once, checkpoints on S3", "s3 sink, exactly-once"],
    ],
    ...(process.env.EXACTLY_S3_ENDPOINT
      ? {}
      : { unavailable: 'EXACTLY_S3_ENDPOINT is not set (pnpm services up s3, then eval "$(pnpm -s services env)")' }),
  },
];

function runCase(
  script: string,
  name: string,
  records: number,
  dir: string,
  env: Record<string, string>,
): Promise<CaseResult> {
  return new Promise((resolve, reject) => {
    // TimeoutNegativeWarning: kafkajs 2.2.4 on Node 24 (tulios/kafkajs#1751), harmless.
    const quiet = ["--disable-warning=ExperimentalWarning", "--disable-warning=TimeoutNegativeWarning"];
    const child = spawn(
      process.execPath,
      ["--conditions=@exactly/source", ...quiet, script, name, String(records), dir],
      { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ...env } },
    );
    let out = "";
    child.stdout.on("data", (c) => {
      out += c;
    });
    child.on("exit", (code, signal) => {
      const line = out.split("\n").find((l) => l.startsWith(RESULT_PREFIX));
      if (code !== 0 || !line) reject(new Error(`case ${name} ended with code ${code} signal ${signal}`));
      else resolve(JSON.parse(line.slice(RESULT_PREFIX.length)) as CaseResult);
    });
  });
}

const median = (xs: readonly number[]) => {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

for (const suite of suites) {
  if (values.only && !suite.connector.startsWith(values.only)) continue;
  if (suite.unavailable) {
    console.log(`\n${suite.connector}: not run: ${suite.unavailable}`);
    continue;
  }
  const env = (await suite.prepare?.()) ?? {};
  for (const size of suite.sizes) await runSuite(suite, size, env);
}

async function runSuite(suite: Suite, size: number, env: Record<string, string>): Promise<void> {
  const results = new Map<string, CaseResult[]>(suite.cases.map((name) => [name, []]));
  for (let round = 1; round <= rounds; round++) {
    for (const name of suite.cases) {
      const dir = await mkdtemp(join(tmpdir(), "exactly-bench-"));
      process.stderr.write(`${suite.connector}: ${name}${rounds > 1 ? ` (round ${round} of ${rounds})` : ""} …\n`);
      const records = Math.min(size, suite.fewerRecords?.[name]?.records ?? size);
      results.get(name)?.push(await runCase(suite.script, name, records, dir, env));
      await rm(dir, { recursive: true, force: true });
    }
  }
  const rateOf = (r: CaseResult) => r.records / r.seconds;
  const referenceRate = median((results.get(suite.cases[0] as string) ?? []).map(rateOf));
  const rows = [...results].map(([name, runs]) => {
    const rates = runs.map(rateOf);
    const rate = median(rates);
    const range =
      runs.length > 1
        ? ` (${Math.round(Math.min(...rates)).toLocaleString("en-US")}–${Math.round(Math.max(...rates)).toLocaleString("en-US")})`
        : "";
    const checkpoints = runs.flatMap((r) => r.checkpointMs);
    const commits = runs.flatMap((r) => r.commitMs ?? []);
    const startups = runs.flatMap((r) => (r.startupMs === undefined ? [] : [r.startupMs]));
    return [
      name,
      `${Math.round(rate).toLocaleString("en-US")}${range}`,
      (rate / referenceRate).toFixed(2),
      median(runs.map((r) => r.cpuSeconds)).toFixed(1),
      String(Math.max(...runs.map((r) => r.peakRssMb))),
      checkpoints.length ? `${median(checkpoints)} (${checkpoints.length})` : "-",
      commits.length ? String(Math.round(median(commits))) : "-",
      startups.length ? String(Math.round(median(startups))) : "-",
    ];
  });
  const header = [
    "case",
    rounds > 1 ? `records/s, median (range) of ${rounds}` : "records/s",
    `× ${suite.cases[0]}`,
    "CPU s",
    "peak RSS MB (max)",
    "checkpoint ms p50 (n)",
    "commit ms p50",
    "startup ms",
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)));
  console.log(`\n${suite.connector}, ${size.toLocaleString("en-US")} records`);
  for (const row of [header, widths.map((w) => "-".repeat(w)), ...rows]) {
    console.log(
      row.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join("  "),
    );
  }
  for (const [name, { records, why }] of Object.entries(suite.fewerRecords ?? {})) {
    if (records < size) console.log(`  ${name}: ${records.toLocaleString("en-US")} records, as ${why}`);
  }
  for (const [name, baseline] of suite.comparisons ?? []) {
    const rate = median((results.get(name) ?? []).map(rateOf));
    const base = median((results.get(baseline) ?? []).map(rateOf));
    console.log(`  ${name} / ${baseline}: ${(rate / base).toFixed(2)}×`);
  }
}
