import { describe, expect, it } from "vitest";
import { type ScenarioName, selectScenarios } from "../src/index.ts";
import { runSelected } from "../src/suite.ts";
import { type Breakage, toyDefinition } from "./fixtures/toy-sink.ts";

/** Each wrong sink, the scenario meant to catch it, and what the report must say. */
/** Each wrong sink, the invariant it breaks (docs/design.md §3), the scenario meant to catch it, and what the report must say. */
const cases: Array<{ broken: Breakage; invariant: string; scenario: ScenarioName; says: RegExp }> = [
  {
    broken: "commit-at-barrier",
    invariant: "I1",
    scenario: "crash-after-pre-commit",
    says: /visible before their checkpoint completed|duplicated/,
  },
  { broken: "no-recover-commit", invariant: "I2", scenario: "crash-after-checkpoint-durable", says: /^lost/ },
  { broken: "no-lingering-abort", invariant: "I4", scenario: "crash-mid-write", says: /lingering after recovery/ },
  { broken: "non-idempotent-commit", invariant: "I5", scenario: "crash-mid-commit", says: /^duplicated/ },
  {
    broken: "writes-outside-transaction",
    invariant: "I1",
    scenario: "clean-run",
    says: /visible before their checkpoint completed/,
  },
];

describe("the suite catches sinks that are wrong on purpose", () => {
  it.each(cases)("$invariant: $broken fails $scenario", async ({ broken, scenario, says }) => {
    const definition = toyDefinition(broken);
    const [selected] = selectScenarios(definition, { only: [scenario], seed: 7 });
    expect(selected?.skipReason).toBeUndefined();
    const result = await runSelected(definition, selected as NonNullable<typeof selected>, { seed: 7, profile: "ci" });
    expect(result.status, JSON.stringify(result.failures)).toBe("failed");
    expect(
      result.failures.some((f) => says.test(f)),
      result.failures.join("\n"),
    ).toBe(true);
  });

  it.each(cases)("the correct toy sink passes $scenario", async ({ scenario }) => {
    const definition = toyDefinition();
    const [selected] = selectScenarios(definition, { only: [scenario], seed: 7 });
    const result = await runSelected(definition, selected as NonNullable<typeof selected>, { seed: 7, profile: "ci" });
    expect(result.failures).toEqual([]);
    expect(result.status).toBe("passed");
  });
});
