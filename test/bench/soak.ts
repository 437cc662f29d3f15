/**
 * `pnpm bench --soak SECONDS [--rate N]`: the demo pipeline at a steady rate for SECONDS in a
 * child process, its RSS sampled every second and every checkpoint's duration kept. Memory
 * must stay flat (I6, docs/design.md §3): the summary sets the first fifth of the run against
 * the last. Writes soak.json and soak.svg (RSS and checkpoint duration over time) into --out.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { max, median } from "simple-statistics";
import * as vega from "vega";
import * as vl from "vega-lite";
import { SOAK_PREFIX, type SoakSamples } from "./bench-protocol.ts";

const script = fileURLToPath(new URL("./soak-job.ts", import.meta.url));

function runSoakJob(seconds: number, rate: number, dir: string): Promise<SoakSamples> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        "--conditions=@exactly/source",
        "--disable-warning=ExperimentalWarning",
        script,
        String(seconds),
        String(rate),
        dir,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    child.stdout.on("data", (c) => {
      out += c;
    });
    child.on("exit", (code, signal) => {
      const line = out.split("\n").find((l) => l.startsWith(SOAK_PREFIX));
      if (code !== 0 || !line) reject(new Error(`the soak job ended with code ${code} signal ${signal}`));
      else resolve(JSON.parse(line.slice(SOAK_PREFIX.length)) as SoakSamples);
    });
  });
}

/** Medians of a series over the first and the last fifth of the run. */
function firstAndLast<T extends { t: number }>(xs: readonly T[], value: (x: T) => number, seconds: number) {
  const first = xs.filter((x) => x.t <= seconds / 5).map(value);
  const last = xs.filter((x) => x.t >= (seconds * 4) / 5).map(value);
  return { first: first.length ? median(first) : Number.NaN, last: last.length ? median(last) : Number.NaN };
}

export async function runSoak(options: { seconds: number; ratePerSecond: number; outDir: string }): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "exactly-soak-"));
  process.stderr.write(`soak: the demo pipeline at ${options.ratePerSecond} records/s for ${options.seconds} s …\n`);
  let samples: SoakSamples;
  try {
    samples = await runSoakJob(options.seconds, options.ratePerSecond, dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const rss = firstAndLast(samples.rss, (s) => s.mb, samples.seconds);
  const checkpoint = firstAndLast(samples.checkpoints, (c) => c.ms, samples.seconds);
  const summary = {
    records: samples.records,
    seconds: samples.seconds,
    ratePerSecond: options.ratePerSecond,
    rssMb: { firstFifthMedian: rss.first, lastFifthMedian: rss.last, max: max(samples.rss.map((s) => s.mb)) },
    checkpointMs: {
      firstFifthMedian: checkpoint.first,
      lastFifthMedian: checkpoint.last,
      n: samples.checkpoints.length,
    },
  };
  console.log(
    [
      `soak: ${samples.records.toLocaleString("en-US")} records in ${samples.seconds.toFixed(0)} s, ${summary.checkpointMs.n} checkpoints`,
      `  RSS MB, median of the first fifth → the last: ${rss.first.toFixed(0)} → ${rss.last.toFixed(0)} (max ${summary.rssMb.max.toFixed(0)})`,
      `  checkpoint ms, median of the first fifth → the last: ${checkpoint.first.toFixed(0)} → ${checkpoint.last.toFixed(0)}`,
    ].join("\n"),
  );
  const spec: vl.TopLevelSpec = {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: `demo pipeline at ${options.ratePerSecond} records/s`,
    vconcat: [
      {
        width: 560,
        height: 180,
        data: { values: samples.rss as unknown as Record<string, unknown>[] },
        mark: "line",
        encoding: {
          x: { field: "t", type: "quantitative", title: "seconds" },
          y: { field: "mb", type: "quantitative", title: "RSS MB", scale: { zero: true } },
        },
      },
      {
        width: 560,
        height: 180,
        data: { values: samples.checkpoints as unknown as Record<string, unknown>[] },
        mark: { type: "point", size: 12 },
        encoding: {
          x: { field: "t", type: "quantitative", title: "seconds" },
          y: { field: "ms", type: "quantitative", title: "checkpoint ms" },
        },
      },
    ],
  };
  const svg = await new vega.View(vega.parse(vl.compile(spec).spec), { renderer: "none" }).toSVG();
  for (const [name, text] of [
    ["soak.json", `${JSON.stringify({ summary, samples }, null, 2)}\n`],
    ["soak.svg", svg],
  ] as const) {
    await writeFile(join(options.outDir, name), text);
    console.log(`wrote ${join(options.outDir, name)}`);
  }
}
