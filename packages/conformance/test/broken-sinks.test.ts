import { describe, expect, it } from "vitest";
import { type ConformanceDefinition, type ScenarioName, selectScenarios } from "../src/index.ts";
import { resolveOptions, runSelected } from "../src/suite.ts";
import { idempotentDefinition } from "./fixtures/toy-idempotent-sink.ts";
import { toyDefinition } from "./fixtures/toy-sink.ts";
import { writeAheadDefinition } from "./fixtures/toy-write-ahead-sink.ts";

/**
 * Each wrong sink, the kind of blind spot it stands for (docs/conformance.md, "Wrong on
 * purpose"), the invariant it breaks (docs/design.md §3), the scenario meant to catch it,
 * and what the report must say. The profile is the one the run asks for
 * (EXACTLY_CONFORMANCE=full runs them all with the full profile).
 */
const cases: Array<{
  kind: string;
  invariant: string;
  definition: ConformanceDefinition;
  scenario: ScenarioName;
  says: RegExp;
}> = [
  {
    kind: "publish",
    invariant: "I1",
    definition: toyDefinition("commit-at-barrier"),
    scenario: "crash-after-pre-commit",
    says: /visible before their checkpoint completed|duplicated/,
  },
  {
    kind: "recover",
    invariant: "I2",
    definition: toyDefinition("no-recover-commit"),
    scenario: "crash-after-checkpoint-durable",
    says: /^lost/,
  },
  {
    kind: "cleanup",
    invariant: "I4",
    definition: toyDefinition("no-lingering-abort"),
    scenario: "crash-mid-write",
    says: /lingering after recovery/,
  },
  {
    kind: "commit",
    invariant: "I5",
    definition: toyDefinition("non-idempotent-commit"),
    scenario: "crash-mid-commit",
    says: /^duplicated/,
  },
  {
    kind: "publish",
    invariant: "I1",
    definition: toyDefinition("writes-outside-transaction"),
    scenario: "clean-run",
    says: /visible before their checkpoint completed/,
  },
  // 1. Crash windows inside the sink's own commit, which no base-class fault point marks.
  {
    kind: "1: window inside commit",
    invariant: "I2",
    definition: toyDefinition("two-step-commit"),
    scenario: "kill-inside-commit",
    says: /^lost/,
  },
  {
    kind: "1: window inside commit",
    invariant: "I2",
    definition: writeAheadDefinition("marker-before-data"),
    scenario: "kill-inside-commit",
    says: /^lost/,
  },
  // 2. Restored state moved across indexes and merged, with work pending at the kill.
  {
    kind: "2: redistribution",
    invariant: "I2",
    definition: toyDefinition("recovers-own-index-only"),
    scenario: "rescale-down",
    says: /^lost/,
  },
  {
    kind: "2: cleanup of other indexes",
    invariant: "I4",
    definition: toyDefinition("cleans-own-index-only"),
    scenario: "rescale-down",
    says: /lingering after recovery/,
  },
  {
    kind: "2: write-ahead replay after a rescale",
    invariant: "I2",
    definition: writeAheadDefinition("replay-under-current-subtask"),
    scenario: "rescale-down",
    says: /^lost/,
  },
  // 3. A decline that comes after the sink pre-committed.
  {
    kind: "3: decline after pre-commit",
    invariant: "I2",
    definition: toyDefinition("aborts-on-decline"),
    scenario: "declined-checkpoint",
    says: /^lost/,
  },
  // 4. complete(n) after snapshot(n+1).
  {
    kind: "4: ordering",
    invariant: "I3",
    definition: toyDefinition("commits-beyond"),
    scenario: "notification-after-next-barrier",
    says: /^duplicated|visible before their checkpoint completed/,
  },
  // 5. What the checker sees: pieces of a transaction, and keys per version.
  {
    kind: "5: transaction seen in pieces",
    invariant: "atomicCommits",
    definition: toyDefinition("torn-commit"),
    scenario: "kill-inside-commit",
    says: /visible in pieces/,
  },
  {
    kind: "5: version not deterministic under replay",
    invariant: "I1 (idempotent)",
    definition: idempotentDefinition("wall-clock-version"),
    scenario: "crash-during-replay",
    says: /moved back|two versions/,
  },
  // 6. Volume and batch shape.
  {
    kind: "6: volume",
    invariant: "I3",
    definition: toyDefinition("drops-every-10000th"),
    scenario: "volume",
    says: /^lost/,
  },
  {
    kind: "6: batch size",
    invariant: "I3",
    definition: toyDefinition("truncates-large-batches"),
    scenario: "batch-sizes",
    says: /^lost/,
  },
];

const { profile } = resolveOptions();

describe(`the suite catches sinks that are wrong on purpose (${profile} profile)`, () => {
  it.each(cases)("$invariant, $kind: $definition.name fails $scenario", async ({ definition, scenario, says }) => {
    const [selected] = selectScenarios(definition, { only: [scenario], seed: 7, profile });
    expect(selected?.skipReason).toBeUndefined();
    const result = await runSelected(definition, selected as NonNullable<typeof selected>, { seed: 7, profile });
    expect(result.status, JSON.stringify(result.failures)).toBe("failed");
    expect(
      result.failures.some((f) => says.test(f)),
      result.failures.join("\n"),
    ).toBe(true);
  });
});
