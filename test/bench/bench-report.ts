/**
 * What `pnpm bench` makes of the cases' results: one summary per case (medians over the
 * rounds, percentiles with simple-statistics), written as bench/results.json for machines,
 * bench/results.md for people, and bench/throughput.svg, a chart drawn with Vega-Lite.
 */
import { writeFile } from "node:fs/promises";
import { cpus } from "node:os";
import { join } from "node:path";
import { median, quantileSorted } from "simple-statistics";
import * as vega from "vega";
import * as vl from "vega-lite";
import type { CaseResult } from "./bench-protocol.ts";

export interface CaseSummary {
  readonly case: string;
  readonly records: number;
  readonly rounds: number;
  readonly recordsPerSecond: number;
  readonly recordsPerSecondRange: readonly [number, number];
  readonly cpuSecondsPerMillionRecords: number;
  readonly peakRssMb: number;
  /** null for cases without checkpoints (the baselines). */
  readonly checkpointMs: { readonly p50: number; readonly p99: number; readonly n: number } | null;
  readonly commitLatencyMs: { readonly p50: number; readonly p99: number } | null;
  /** Restart after a SIGKILL → first commit; null where not measured (non-exactly-once cases). */
  readonly recoveryMs: number | null;
  /** records/s over the raw-client baseline's, and over the naive loop's; null where there is none. */
  readonly vsRaw: number | null;
  readonly vsNaive: number | null;
  /** records/s over the server's own tool doing the same writes; null where there is none. */
  readonly vsServer: number | null;
  readonly raw: string | null;
  readonly naive: string | null;
  readonly server: string | null;
}

export interface SuiteSummary {
  readonly connector: string;
  readonly records: number;
  readonly notes: readonly string[];
  readonly cases: readonly CaseSummary[];
}

export interface BenchResults {
  readonly generatedAt: string;
  readonly machine: { readonly cpus: number; readonly cpuModel: string; readonly node: string };
  readonly quick: boolean;
  readonly rounds: number;
  readonly suites: readonly SuiteSummary[];
  /** Suites that could not run here, and why. */
  readonly notRun: ReadonlyArray<{ readonly connector: string; readonly why: string }>;
}

function percentiles(values: readonly number[]): { p50: number; p99: number; n: number } | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: quantileSorted(sorted, 0.5), p99: quantileSorted(sorted, 0.99), n: sorted.length };
}

const rateOf = (r: CaseResult) => r.records / r.seconds;

/** One case's runs (one per round), summarised; ratios are filled in by {@link summariseSuite}. */
function summariseCase(name: string, runs: readonly CaseResult[], recoveryMs: number | null) {
  const rates = runs.map(rateOf);
  const records = runs[0]?.records ?? 0;
  const commits = percentiles(runs.flatMap((r) => r.commitMs ?? []));
  return {
    case: name,
    records,
    rounds: runs.length,
    recordsPerSecond: median(rates),
    recordsPerSecondRange: [Math.min(...rates), Math.max(...rates)] as const,
    cpuSecondsPerMillionRecords: median(runs.map((r) => r.cpuSeconds)) / (records / 1e6),
    peakRssMb: Math.max(...runs.map((r) => r.peakRssMb)),
    checkpointMs: percentiles(runs.flatMap((r) => r.checkpointMs)),
    commitLatencyMs: commits && { p50: commits.p50, p99: commits.p99 },
    recoveryMs,
  };
}

export function summariseSuite(
  suite: {
    readonly connector: string;
    readonly cases: readonly string[];
    readonly raw?: string;
    readonly rawFor?: Readonly<Record<string, string>>;
    readonly naive?: string;
    readonly server?: string;
    readonly serverFor?: Readonly<Record<string, string>>;
  },
  size: number,
  results: ReadonlyMap<string, readonly CaseResult[]>,
  recovery: ReadonlyMap<string, number>,
  notes: readonly string[],
): SuiteSummary {
  const plain = suite.cases.map((name) => summariseCase(name, results.get(name) ?? [], recovery.get(name) ?? null));
  const rate = (name: string | undefined) => plain.find((c) => c.case === name)?.recordsPerSecond;
  const tools = new Set([suite.server, ...Object.values(suite.serverFor ?? {})]);
  const cases = plain.map((c): CaseSummary => {
    // The server's tools are references, not compared with the client library.
    const raw = tools.has(c.case) ? undefined : (suite.rawFor?.[c.case] ?? suite.raw);
    const naive = tools.has(c.case) ? undefined : suite.naive;
    const rawRate = rate(raw);
    const naiveRate = rate(naive);
    const server = suite.serverFor?.[c.case] ?? suite.server;
    const serverRate = rate(server);
    return {
      ...c,
      raw: raw ?? null,
      naive: naive ?? null,
      server: server ?? null,
      vsRaw: rawRate === undefined || raw === c.case ? null : c.recordsPerSecond / rawRate,
      vsNaive: naiveRate === undefined || naive === c.case ? null : c.recordsPerSecond / naiveRate,
      vsServer: serverRate === undefined || server === c.case ? null : c.recordsPerSecond / serverRate,
    };
  });
  return { connector: suite.connector, records: size, notes, cases };
}

const int = (n: number) => Math.round(n).toLocaleString("en-US");
const ratio = (n: number | null) => (n === null ? "-" : `${n.toFixed(2)}×`);
const pair = (p: { p50: number; p99: number } | null) => (p === null ? "-" : `${int(p.p50)} / ${int(p.p99)}`);

const COLUMNS = [
  "case",
  "records/s",
  "CPU s per M records",
  "peak RSS MB",
  "checkpoint ms p50 / p99",
  "commit latency ms p50 / p99",
  "recovery ms",
  "× raw",
  "× naive",
  "× server",
] as const;

function row(c: CaseSummary): string[] {
  const range = c.rounds > 1 ? ` (${int(c.recordsPerSecondRange[0])}–${int(c.recordsPerSecondRange[1])})` : "";
  return [
    c.case,
    `${int(c.recordsPerSecond)}${range}`,
    // Two figures past the point: the demo job's cases all spend well under a second a million.
    c.cpuSecondsPerMillionRecords.toFixed(2),
    String(c.peakRssMb),
    pair(c.checkpointMs),
    pair(c.commitLatencyMs),
    c.recoveryMs === null ? "-" : int(c.recoveryMs),
    ratio(c.vsRaw),
    ratio(c.vsNaive),
    ratio(c.vsServer),
  ];
}

/** The suite's table as aligned text, for the terminal. */
export function formatSuite(suite: SuiteSummary): string {
  const rows = suite.cases.map(row);
  const widths = COLUMNS.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join("  ");
  return [
    `\n${suite.connector}, ${int(suite.records)} records`,
    line(COLUMNS),
    line(widths.map((w) => "-".repeat(w))),
    ...rows.map(line),
    ...suite.notes.map((n) => `  ${n}`),
    ...baselines(suite).map((b) => `  ${b}`),
  ].join("\n");
}

/** Which baseline each ratio column is over, case by case. */
function baselines(suite: SuiteSummary): string[] {
  const byRaw = new Map<string, string[]>();
  for (const c of suite.cases) {
    if (c.raw === null || c.raw === c.case) continue;
    byRaw.set(c.raw, [...(byRaw.get(c.raw) ?? []), c.case]);
  }
  const byServer = new Map<string, string[]>();
  for (const c of suite.cases) {
    if (c.server === null || c.server === c.case) continue;
    byServer.set(c.server, [...(byServer.get(c.server) ?? []), c.case]);
  }
  const naive = suite.cases.find((c) => c.naive !== null)?.naive;
  const raws = [...byRaw].map(([raw, cases]) => `${raw} for ${cases.join(", ")}`);
  const servers = [...byServer].map(([server, cases]) => `${server} for ${cases.join(", ")}`);
  return [
    ...(raws.length ? [`× raw: over ${raws.join("; ")}`] : []),
    ...(naive ? [`× naive: over ${naive}`] : []),
    ...(servers.length ? [`× server: over ${servers.join("; ")}`] : []),
  ];
}

function markdown(results: BenchResults): string {
  const lines = [
    "# Benchmark results",
    "",
    `Written by \`pnpm bench${results.quick ? " --quick" : ""}\` on ${results.generatedAt}: ${results.machine.cpus} × ${results.machine.cpuModel}, Node ${results.machine.node}, ${results.rounds} round(s) per case (medians; a range where more than one). Benchmarks are not tests: nothing asserts on these figures.`,
    "",
    "CPU s per M records counts the case's whole process, its start included, which weighs on the small counts of `--quick`. Recovery is the time from the restart of a process SIGKILLed mid-run to its first commit, one checkpoint interval included (1 s; 100 ms for Kafka's case). × raw and × naive are records/s over the raw-client baseline's (the same writes with the client library alone) and over the naive exactly-once loop's (a transaction per batch); × server over the server's own tool doing the same writes on the same server (redis-benchmark, Apache Kafka's ProducerPerformance, psql's \\copy), its CPU and peak RSS the tool's own.",
    "",
    "![throughput per case](./throughput.svg)",
  ];
  for (const suite of results.suites) {
    lines.push("", `## ${suite.connector}, ${int(suite.records)} records`, "");
    lines.push(`| ${COLUMNS.join(" | ")} |`, `| ${COLUMNS.map((_, i) => (i === 0 ? "---" : "---:")).join(" | ")} |`);
    for (const c of suite.cases) lines.push(`| ${row(c).join(" | ")} |`);
    const notes = [...suite.notes, ...baselines(suite)];
    if (notes.length) lines.push("", ...notes.map((n) => `- ${n}`));
  }
  for (const skipped of results.notRun) lines.push("", `## ${skipped.connector}: not run`, "", skipped.why);
  return `${lines.join("\n")}\n`;
}

/** Throughput per case, one panel per connector (each its own scale: their rates differ by 100×). */
async function chart(results: BenchResults): Promise<string> {
  const values = results.suites.flatMap((s) =>
    s.cases.map((c) => ({ connector: `${s.connector} (${int(s.records)})`, case: c.case, rate: c.recordsPerSecond })),
  );
  const spec: vl.TopLevelSpec = {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: "records/s per case",
    data: { values },
    facet: { row: { field: "connector", type: "nominal", title: null, header: { labelAngle: 0, labelAlign: "left" } } },
    spec: {
      width: 520,
      mark: { type: "bar", tooltip: true },
      encoding: {
        y: { field: "case", type: "nominal", title: null, sort: null },
        x: { field: "rate", type: "quantitative", title: "records/s" },
        color: { field: "case", type: "nominal", legend: null },
      },
    },
    resolve: { scale: { x: "independent", y: "independent" } },
  };
  const view = new vega.View(vega.parse(vl.compile(spec).spec), { renderer: "none" });
  return view.toSVG();
}

export function machine(): BenchResults["machine"] {
  return { cpus: cpus().length, cpuModel: cpus()[0]?.model.trim() ?? "unknown", node: process.version };
}

/** Writes results.json, results.md and throughput.svg into `dir`; returns their paths. */
export async function writeResults(dir: string, results: BenchResults): Promise<string[]> {
  const files = {
    "results.json": `${JSON.stringify(results, null, 2)}\n`,
    "results.md": markdown(results),
    "throughput.svg": await chart(results),
  };
  const paths: string[] = [];
  for (const [name, text] of Object.entries(files)) {
    const path = join(dir, name);
    await writeFile(path, text);
    paths.push(path);
  }
  return paths;
}
