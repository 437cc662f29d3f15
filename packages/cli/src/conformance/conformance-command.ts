import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import {
  type ConformanceDefinition,
  formatBytes,
  formatFailure,
  runConformance,
  SCENARIOS,
  type ScenarioName,
  type ScenarioResult,
  selectScenarios,
} from "@exactly/conformance";
import { ConfigurationError } from "@exactly/core";
import { SingleBar } from "cli-progress";

export interface ConformanceCommandOptions {
  readonly full: boolean;
  readonly seed?: number;
  readonly only?: string;
  readonly export: string;
  /** Write a machine-readable report here (`-` for stdout, which then holds nothing else). */
  readonly json?: string;
  /** Run the selection this many times with the same seed; failed if any round fails. */
  readonly repeat?: number;
  /** Worker threads for every scenario's job (the definition's `workers`, overridden). */
  readonly workers?: number;
}

/** The `--only` help: every scenario's name. */
export const ONLY_HELP = `comma-separated scenario names: ${SCENARIOS.join(", ")}`;

async function loadDefinition(module: string, exportName: string): Promise<ConformanceDefinition> {
  const loaded = (await import(pathToFileURL(resolve(module)).href)) as Record<string, unknown>;
  const definition = (loaded[exportName] ?? (exportName === "definition" ? loaded.default : undefined)) as
    | ConformanceDefinition
    | undefined;
  if (!definition || (typeof definition.readCommitted !== "function" && typeof definition.readUpserts !== "function")) {
    throw new ConfigurationError(
      "--export",
      `${module} exports no conformance definition named "${exportName}" (nor a default export)`,
    );
  }
  return definition;
}

function parseOnly(only: string | undefined): ScenarioName[] | undefined {
  if (!only) return undefined;
  const names = only.split(",").map((s) => s.trim());
  for (const name of names) {
    if (!(SCENARIOS as readonly string[]).includes(name)) {
      throw new ConfigurationError("--only", `unknown scenario ${name}; scenarios are ${SCENARIOS.join(", ")}`);
    }
  }
  return names as ScenarioName[];
}

/** What a scenario's runs exercised, in a few words for the table. */
export function describeExercised(result: ScenarioResult): string {
  const seen = result.exercised;
  if (!seen) return "";
  const words = [
    seen.restoredState && "restored state",
    seen.pendingRestored && "pending work",
    seen.acrossIndexes && "across indexes",
    seen.merged && "merged subtasks",
    seen.declinedAfterPreCommit && "decline after pre-commit",
    seen.lateNotification && "complete(n) after snapshot(n+1)",
    seen.onThreads && "subtasks on threads",
    seen.pendingAcrossOwners && "pending work of an index another subtask cleans up",
    seen.cleanupBeforeCommits && "cleanup before another's recovery commits",
    seen.commitsBeforeCleanup && "recovery commits before another's cleanup",
    seen.subsumedCompletion && "completion with older work pending",
    seen.declinedThenCompleted && "completion after a decline",
    ...seen.killedInside.map((hook) =>
      seen.killedInsideSynchronously.includes(hook)
        ? `killed inside ${hook} (before a synchronous call)`
        : `killed inside ${hook}`,
    ),
  ].filter((w): w is string => typeof w === "string");
  return words.join(", ") || "fresh start only";
}

export function formatTable(results: readonly ScenarioResult[]): string {
  const rows = results.map((r) => [
    r.name,
    r.status === "skipped"
      ? `skip (${r.skipReason})`
      : r.attempts > 1
        ? `${r.status} (${r.attempts} attempts)`
        : r.status,
    r.status === "skipped" ? "" : `${(r.durationMs / 1000).toFixed(1)} s`,
    describeExercised(r),
    [...r.failures, ...r.notes].join("; "),
  ]);
  const header = ["scenario", "result", "time", "exercised", "details"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] as number)))
      .join("  ")
      .trimEnd();
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

/** The command that replays one scenario of this run with a given seed. */
export function replayCommand(
  module: string,
  options: Pick<ConformanceCommandOptions, "full" | "export" | "workers">,
  scenario: ScenarioName,
  seed: number,
): string {
  const flags = [
    ...(options.full ? ["--full"] : []),
    ...(options.export !== "definition" ? ["--export", options.export] : []),
    ...(options.workers !== undefined ? ["--workers", String(options.workers)] : []),
  ];
  return ["exactly conformance", module, "--seed", String(seed), "--only", scenario, ...flags].join(" ");
}

/** One scenario in the `--json` report. */
export interface JsonScenario {
  readonly scenario: ScenarioName;
  readonly round: number;
  readonly verdict: ScenarioResult["status"];
  readonly seed: number;
  readonly attempts: number;
  readonly durationMs: number;
  readonly exercised: string;
  readonly details: readonly string[];
  readonly notes: readonly string[];
  readonly faults: readonly string[];
  readonly killsLanded: readonly string[];
  readonly skipReason?: string;
  readonly replay?: string;
  readonly scratchDir?: string;
  readonly scratchBytes?: number;
}

export function jsonReport(
  definition: ConformanceDefinition,
  module: string,
  options: ConformanceCommandOptions,
  rounds: readonly (readonly ScenarioResult[])[],
  outcome: "passed" | "failed" | "inconclusive",
): object {
  const scenarios: JsonScenario[] = rounds.flatMap((results, round) =>
    results.map((r) => ({
      scenario: r.name,
      round: round + 1,
      verdict: r.status,
      seed: r.seed,
      attempts: r.attempts,
      durationMs: r.durationMs,
      exercised: describeExercised(r),
      details: r.failures,
      notes: r.notes,
      faults: r.faults,
      killsLanded: r.killsLanded ?? [],
      ...(r.skipReason ? { skipReason: r.skipReason } : {}),
      ...(r.status === "failed" || r.status === "inconclusive"
        ? { replay: replayCommand(module, options, r.name, r.seed) }
        : {}),
      ...(r.scope ? { scratchDir: r.scope.dir } : {}),
      ...(r.scratchBytes === undefined ? {} : { scratchBytes: r.scratchBytes }),
    })),
  );
  return {
    definition: definition.name,
    module,
    profile: options.full ? "full" : "ci",
    seed: rounds[0]?.[0]?.seed ?? options.seed ?? null,
    rounds: rounds.length,
    outcome,
    scenarios,
  };
}

/**
 * `exactly conformance <module>`: the suite without vitest. The outcome is "failed" on any
 * failure, else "inconclusive" when a scenario tested nothing in all its attempts, else "passed".
 */
export async function runConformanceCommand(
  module: string,
  options: ConformanceCommandOptions,
): Promise<"passed" | "failed" | "inconclusive"> {
  const loaded = await loadDefinition(module, options.export);
  const definition = options.workers === undefined ? loaded : { ...loaded, workers: options.workers };
  const only = parseOnly(options.only);
  const repeat = options.repeat ?? 1;
  if (!Number.isInteger(repeat) || repeat < 1)
    throw new ConfigurationError("--repeat", `must be 1 or more; got ${repeat}`);
  // One seed for every round: --repeat replays the same plans.
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const suiteOptions = {
    profile: options.full ? ("full" as const) : ("ci" as const),
    seed,
    ...(only ? { only } : {}),
  };
  // With --json -, stdout holds the report alone.
  const log = options.json === "-" ? (text: string) => process.stderr.write(`${text}\n`) : console.log;
  const total = selectScenarios(definition, suiteOptions).length;
  const rounds: ScenarioResult[][] = [];
  for (let round = 1; round <= repeat; round++) {
    const bar = new SingleBar({
      format: `conformance: ${definition.name}${repeat > 1 ? ` (round ${round} of ${repeat})` : ""} |{bar}| {value}/{total} {scenario}`,
      stream: process.stderr,
      noTTYOutput: true,
      notTTYSchedule: 2000,
    });
    bar.start(total, 0, { scenario: "" });
    rounds.push(
      await runConformance(definition, suiteOptions, (result) =>
        bar.increment(1, { scenario: `${result.name}: ${result.status}` }),
      ),
    );
    bar.stop();
  }
  const results = rounds.flat();
  for (const [round, roundResults] of rounds.entries()) {
    if (repeat > 1) log(`\nround ${round + 1} of ${repeat}`);
    log(formatTable(roundResults));
  }
  const failed = results.filter((r) => r.status === "failed");
  const inconclusive = results.filter((r) => r.status === "inconclusive");
  for (const result of [...failed, ...inconclusive]) {
    log(`\n${formatFailure(definition, result, (s) => replayCommand(module, options, result.name, s))}`);
  }
  const kept = failed.filter((r) => r.scope);
  if (kept.length > 0) {
    log("\nscratch folders of failed scenarios, kept for a post-mortem (passed ones are removed):");
    for (const r of kept) {
      log(`  ${r.scope?.dir}  ${r.scratchBytes === undefined ? "" : formatBytes(r.scratchBytes)}  (${r.name})`);
    }
  }
  const passed = results.filter((r) => r.status === "passed").length;
  const skipped = results.filter((r) => r.status === "skipped").length;
  log(
    `\n${passed} passed, ${failed.length} failed, ${inconclusive.length} inconclusive, ${skipped} skipped (seed ${seed}${repeat > 1 ? `, ${repeat} rounds` : ""})`,
  );
  const outcome = failed.length > 0 ? "failed" : inconclusive.length > 0 ? "inconclusive" : "passed";
  if (options.json) {
    const report = `${JSON.stringify(jsonReport(definition, module, options, rounds, outcome), null, 2)}\n`;
    if (options.json === "-") process.stdout.write(report);
    else await writeFile(options.json, report);
  }
  return outcome;
}
