// The sink guide traces every scenario of the suite to a rule and the least code that keeps
// it (docs/writing-a-sink.md, "What each scenario checks"): a scenario added to the suite
// without its row, or a row left for a scenario that is gone, fails here.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SCENARIOS } from "../src/index.ts";

const guide = readFileSync(new URL("../../../docs/writing-a-sink.md", import.meta.url), "utf8");

/** The scenario names in the first column of the section's table, in order. */
function tracedScenarios(markdown: string): string[] {
  const start = markdown.indexOf("\n## What each scenario checks\n");
  if (start < 0) return [];
  const end = markdown.indexOf("\n## ", start + 1);
  const section = markdown.slice(start, end < 0 ? undefined : end);
  return section
    .split("\n")
    .map((line) => /^\| `([a-z-]+)` \|/.exec(line)?.[1])
    .filter((name): name is string => name !== undefined);
}

describe("the sink guide's rules", () => {
  it("trace every scenario of the suite, each once, and no other", () => {
    const traced = tracedScenarios(guide);
    expect(
      SCENARIOS.filter((name) => !traced.includes(name)),
      "scenarios with no row in the guide",
    ).toEqual([]);
    expect(
      traced.filter((name) => !(SCENARIOS as readonly string[]).includes(name)),
      "rows for no scenario",
    ).toEqual([]);
    expect(new Set(traced).size, "a scenario with two rows").toBe(traced.length);
  });

  it("finds nothing in a guide without the section (the check can fail)", () => {
    expect(tracedScenarios("# Writing a sink\n\n## Rules\n| `clean-run` | x | y |\n")).toEqual([]);
  });
});
