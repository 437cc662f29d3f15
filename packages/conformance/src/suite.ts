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

/** Explains a failed or inconclusive scenario: what broke, at which fault points, and how to replay it. */
export function formatFailure(definition: ConformanceDefinition, result: ScenarioResult): string {
  return [
    `${definition.name} ${result.status === "inconclusive" ? "could not test" : "failed"} scenario ${result.name} (${result.description})`,
    ...result.failures.map((f) => `  - ${f}`),
    `  faults: ${result.faults.join(" → ") || "none"}`,
    `  replay: EXACTLY_CONFORMANCE_SEED=${result.seed}${result.scope ? `; scratch dir kept at ${result.scope.dir}` : ""}`,
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
          if (result.status === "failed") throw new Error(formatFailure(definition, result));
          // Tested nothing in every attempt: not a pass, and not the sink's failure.
          if (result.status === "inconclusive") context.skip(`inconclusive: ${result.failures.join(" | ")}`);
        },
        1_200_000,
      );
    }
  });
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
