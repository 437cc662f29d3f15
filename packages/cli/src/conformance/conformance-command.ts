import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import {
  type ConformanceDefinition,
  formatFailure,
  runConformance,
  SCENARIOS,
  type ScenarioName,
  type ScenarioResult,
  selectScenarios,
} from "@exactly/conformance";
import { SingleBar } from "cli-progress";

export interface ConformanceCommandOptions {
  readonly full: boolean;
  readonly seed?: number;
  readonly only?: string;
  readonly export: string;
}

async function loadDefinition(module: string, exportName: string): Promise<ConformanceDefinition> {
  const loaded = (await import(pathToFileURL(resolve(module)).href)) as Record<string, unknown>;
  const definition = (loaded[exportName] ?? (exportName === "definition" ? loaded.default : undefined)) as
    | ConformanceDefinition
    | undefined;
  if (!definition || (typeof definition.readCommitted !== "function" && typeof definition.readUpserts !== "function")) {
    throw new Error(`${module} exports no conformance definition named "${exportName}" (nor a default export)`);
  }
  return definition;
}

function parseOnly(only: string | undefined): ScenarioName[] | undefined {
  if (!only) return undefined;
  const names = only.split(",").map((s) => s.trim());
  for (const name of names) {
    if (!(SCENARIOS as readonly string[]).includes(name)) {
      throw new Error(`--only: unknown scenario ${name}; scenarios are ${SCENARIOS.join(", ")}`);
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
    ...seen.killedInside.map((hook) => `killed inside ${hook}`),
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

/**
 * `exactly conformance <module>`: the suite without vitest. The outcome is "failed" on any
 * failure, else "inconclusive" when a scenario tested nothing in all its attempts, else "passed".
 */
export async function runConformanceCommand(
  module: string,
  options: ConformanceCommandOptions,
): Promise<"passed" | "failed" | "inconclusive"> {
  const definition = await loadDefinition(module, options.export);
  const only = parseOnly(options.only);
  const suiteOptions = {
    profile: options.full ? ("full" as const) : ("ci" as const),
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    ...(only ? { only } : {}),
  };
  const total = selectScenarios(definition, suiteOptions).length;
  const bar = new SingleBar({
    format: `conformance: ${definition.name} |{bar}| {value}/{total} {scenario}`,
    stream: process.stderr,
    noTTYOutput: true,
    notTTYSchedule: 2000,
  });
  bar.start(total, 0, { scenario: "" });
  const results = await runConformance(definition, suiteOptions, (result) =>
    bar.increment(1, { scenario: `${result.name}: ${result.status}` }),
  );
  bar.stop();
  console.log(formatTable(results));
  const failed = results.filter((r) => r.status === "failed");
  const inconclusive = results.filter((r) => r.status === "inconclusive");
  for (const result of [...failed, ...inconclusive]) console.log(`\n${formatFailure(definition, result)}`);
  const passed = results.filter((r) => r.status === "passed").length;
  const skipped = results.filter((r) => r.status === "skipped").length;
  console.log(
    `\n${passed} passed, ${failed.length} failed, ${inconclusive.length} inconclusive, ${skipped} skipped (seed ${results[0]?.seed ?? "-"})`,
  );
  return failed.length > 0 ? "failed" : inconclusive.length > 0 ? "inconclusive" : "passed";
}
