import * as example from "@exactly/example-kafka-window-sum";
import { describe, expect, it } from "vitest";
import { loadWindowSumExample, WINDOW_SUM_EXAMPLE, type WindowSumExample } from "../src/demo/targets/kafka-target.ts";

// The CLI loads the example without depending on it, so nothing but this line checks that the
// example still has the shape the CLI calls (tsc -p tsconfig.test.json).
const fits: WindowSumExample = example;

describe("exactly demo --kafka loads the window-sum example", () => {
  it("from the installed package, when there is one", async () => {
    expect(WINDOW_SUM_EXAMPLE).toBe("@exactly/example-kafka-window-sum");
    expect((await loadWindowSumExample()).runWindowSum).toBe(fits.runWindowSum);
  });

  // Nothing is on npm yet: `npm install <the example>` answers E404, so the way to the example
  // is the packed packages of a clone, as docs/getting-started.md makes them.
  it("or fails naming the package and how to get it from the packed packages, not from npm", async () => {
    const refusal = loadWindowSumExample("@exactly/no-such-example");
    await expect(refusal).rejects.toThrow(
      "exactly demo kafka: runs the example @exactly/no-such-example, which is not installed and not on npm: " +
        "in a clone of the repository, pack examples/kafka-window-sum and connectors/kafka as docs/getting-started.md " +
        "packs the others (pnpm pack --pack-destination <dir>), then npm install their .tgz files next to @exactly/cli",
    );
    await expect(refusal).rejects.not.toThrow(/npm install @exactly/);
  });
});
