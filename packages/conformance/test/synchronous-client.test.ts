import { describe, expect, it } from "vitest";
import { definition } from "../../../examples/sqlite-sink/src/sqlite-sink.ts";
import { selectScenarios } from "../src/index.ts";
import { resolveOptions, runSelected } from "../src/suite.ts";

// A sink on node:sqlite does no asynchronous operation inside its hooks: the suite must
// still kill it inside them (between two statements), and say so, rather than end
// inconclusive. The whole suite on this sink runs in base-classes/synchronous-client.conformance.test.ts.
describe("a sink on a synchronous client (node:sqlite)", () => {
  const { profile, seed } = resolveOptions();

  it(`is killed inside its commit, between two statements, and passes (seed ${seed})`, async () => {
    const [selected] = selectScenarios(definition, { only: ["kill-inside-commit"], seed, profile });
    expect(selected?.skipReason).toBeUndefined();
    const result = await runSelected(definition, selected as NonNullable<typeof selected>, { seed, profile });
    expect(result.status, result.failures.join("\n")).toBe("passed");
    expect(result.exercised?.killedInsideSynchronously).toContain("notifyCheckpointComplete");
    const inside = (result.killsLanded ?? []).filter(
      (k) => k === "inside notifyCheckpointComplete (before a synchronous call)",
    );
    expect(inside.length, (result.killsLanded ?? []).join(", ")).toBeGreaterThan(1);
  });
});
