import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describeDeclarations, sinkDeclarations } from "./declarations.ts";
import { type ConformanceDefinition, SCENARIOS, type ScenarioName } from "./definition.ts";
import { runScenario, type ScenarioResult } from "./run-scenario.ts";
import { PROFILES, type Profile, planScenarios, type ScenarioPlan } from "./scenarios.ts";

export interface SuiteOptions {
  /** "ci" (default; a few minutes a sink) or "full"; EXACTLY_CONFORMANCE=full selects full. */
  readonly profile?: Profile;
  /** Seed of the chaos scenario; EXACTLY_CONFORMANCE_SEED replays one. Default: random. */
  readonly seed?: number;
  /** Run only these scenarios. */
  readonly only?: readonly ScenarioName[];
}

export interface SelectedScenario {
  readonly plan: ScenarioPlan;
  /** Set when the scenario does not run, with the reason the report prints. */
  readonly skipReason?: string;
}

export function resolveOptions(options: SuiteOptions = {}): { profile: Profile; seed: number } {
  const profile = options.profile ?? (process.env.EXACTLY_CONFORMANCE === "full" ? "full" : "ci");
  const envSeed = process.env.EXACTLY_CONFORMANCE_SEED;
  const seed = options.seed ?? (envSeed ? Number(envSeed) : Math.floor(Math.random() * 2 ** 31));
  return { profile, seed };
}

/**
 * The scenarios for a sink, each with its skip reason: the author's, or a capability the
 * sink does not declare. Planned from the sink's own declarations: builds one sink in a
 * child process the first time (see {@link sinkDeclarations}), and throws a
 * `ConformanceDefinitionError` when the definition claims what the sink does not declare.
 */
export function selectScenarios(definition: ConformanceDefinition, options: SuiteOptions = {}): SelectedScenario[] {
  const { profile, seed } = resolveOptions(options);
  return planScenarios(sinkDeclarations(definition), PROFILES[profile], seed)
    .filter(({ plan }) => !options.only || options.only.includes(plan.name))
    .map(({ plan, notApplicable }) => {
      const skipReason = definition.skip?.[plan.name] ?? notApplicable;
      return skipReason ? { plan, skipReason } : { plan };
    });
}

/** Runs one selected scenario (or reports it skipped). */
export async function runSelected(
  definition: ConformanceDefinition,
  selected: SelectedScenario,
  options: SuiteOptions = {},
): Promise<ScenarioResult> {
  const { profile, seed } = resolveOptions(options);
  if (selected.skipReason) {
    return {
      name: selected.plan.name,
      description: selected.plan.description,
      status: "skipped",
      skipReason: selected.skipReason,
      catches: selected.plan.catches,
      failures: [],
      notes: [],
      faults: [],
      seed,
      attempts: 0,
      durationMs: 0,
    };
  }
  const sink = sinkDeclarations(definition);
  const name = selected.plan.name;
  // A retry plans the same scenario again from a fresh seed.
  const planFor = (s: number) =>
    (planScenarios(sink, PROFILES[profile], s).find(({ plan }) => plan.name === name) as { plan: ScenarioPlan }).plan;
  return runScenario(definition, sink, planFor, PROFILES[profile], seed);
}

/** A size in bytes, for people: `12.3 MB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * Explains a failed or inconclusive scenario: what broke, at which fault points, and the
 * command that replays it. `replay` is that command for the seed the result names (the
 * CLI gives its own); by default the vitest one.
 */
export function formatFailure(
  definition: ConformanceDefinition,
  result: ScenarioResult,
  replay: (seed: number) => string = (seed) =>
    `EXACTLY_CONFORMANCE_SEED=${seed} pnpm exec vitest run <your conformance test> -t "${result.name}"`,
): string {
  const kept = result.scope
    ? [
        `  scratch dir kept at ${result.scope.dir}${result.scratchBytes === undefined ? "" : ` (${formatBytes(result.scratchBytes)})`}`,
      ]
    : [];
  return [
    `${definition.name} ${result.status === "inconclusive" ? "could not test" : "failed"} scenario ${result.name} (${result.description})`,
    ...result.failures.map((f) => `  - ${f}`),
    `  faults: ${result.faults.join(" → ") || "none"}`,
    `  replay: ${replay(result.seed)}`,
    // The seed fixes the plan; the machine still decides when checkpoints complete.
    "  the seed replays the same plan (faults, kills, the order subtasks recover in, notifications); when",
    "  checkpoints complete is up to the machine, so a replay that passes may need repeating (CLI: --repeat 5)",
    ...kept,
  ].join("\n");
}

/** The test runner the suite registers into; vitest's `describe` and `it` fit. */
export interface TestRunner {
  describe(name: string, body: () => void): void;
  /** `context.skip(note)` reports an inconclusive scenario: neither passed nor failed. */
  it: ((name: string, body: (context: { skip(note?: string): void }) => Promise<void>, timeoutMs?: number) => void) & {
    skip(name: string, body: () => void): void;
  };
}

/**
 * Registers one test a scenario, after a first test, "sink declarations", that fails when
 * the definition claims what its sink does not declare (then no scenario runs). A
 * connector's conformance test is a few lines:
 *
 * ```ts
 * import { describe, it } from "vitest";
 * import { conformanceSuite } from "@exactly/conformance";
 * conformanceSuite({ describe, it }, definition);
 * ```
 */
export function conformanceSuite(
  runner: TestRunner,
  definition: ConformanceDefinition,
  options: SuiteOptions = {},
): void {
  const resolved = { ...options, ...resolveOptions(options) };
  const file = callerFile();
  const replay = (name: ScenarioName) => (seed: number) =>
    `EXACTLY_CONFORMANCE_SEED=${seed} pnpm exec vitest run ${file ?? "<this test file>"} -t "${name}"`;
  runner.describe(`conformance: ${definition.name}`, () => {
    let scenarios: SelectedScenario[];
    let declarations: string;
    try {
      declarations = describeDeclarations(sinkDeclarations(definition));
      scenarios = selectScenarios(definition, resolved);
    } catch (error) {
      // Loud and first: the definition's test fails with what disagrees; nothing is planned from it.
      const message = error instanceof Error ? error.message : String(error);
      runner.it("sink declarations", async () => {
        throw new Error(message);
      });
      for (const name of SCENARIOS.filter((n) => !resolved.only || resolved.only.includes(n))) {
        runner.it.skip(`${name} (not run: see the failed "sink declarations")`, () => {});
      }
      return;
    }
    // The check itself runs in the test too (on the memoized probe), so this test asserts
    // what it names: the definition agrees with the sink, and the plan came from these.
    runner.it(`sink declarations (${declarations})`, async () => {
      const now = describeDeclarations(sinkDeclarations(definition));
      if (now !== declarations) throw new Error(`the sink's declarations changed: ${declarations}, then ${now}`);
    });
    for (const selected of scenarios) {
      if (selected.skipReason) {
        runner.it.skip(`${selected.plan.name} (skipped: ${selected.skipReason})`, () => {});
        continue;
      }
      runner.it(
        selected.plan.name,
        async (context) => {
          const result = await runSelected(definition, selected, resolved);
          if (result.status === "failed") throw new Error(formatFailure(definition, result, replay(result.name)));
          // Tested nothing in every attempt: not a pass, and not the sink's failure.
          if (result.status === "inconclusive") context.skip(`inconclusive: ${result.failures.join(" | ")}`);
        },
        1_200_000,
      );
    }
  });
}

/** The file that called `conformanceSuite` (the test file), relative to the working directory. */
function callerFile(): string | undefined {
  const here = import.meta.url;
  for (const line of (new Error().stack ?? "").split("\n").slice(1)) {
    const match = /(file:\/\/[^\s)]+?|\/[^\s)(]+?):\d+:\d+\)?$/.exec(line.trim());
    const url = match?.[1];
    if (!url || url === here || url.startsWith(here.replace(/suite\.[jt]s$/, ""))) continue;
    const path = url.startsWith("file://") ? fileURLToPath(url) : url;
    return relative(process.cwd(), path) || path;
  }
  return undefined;
}

/**
 * Runs every scenario in turn (the CLI's path); `onResult` sees each as it ends. Throws a
 * `ConformanceDefinitionError` before the first scenario when the definition claims what
 * its sink does not declare.
 */
export async function runConformance(
  definition: ConformanceDefinition,
  options: SuiteOptions = {},
  onResult?: (result: ScenarioResult) => void,
): Promise<ScenarioResult[]> {
  const resolved = { ...options, ...resolveOptions(options) };
  const results: ScenarioResult[] = [];
  for (const selected of selectScenarios(definition, resolved)) {
    const result = await runSelected(definition, selected, resolved);
    results.push(result);
    onResult?.(result);
  }
  return results;
}
