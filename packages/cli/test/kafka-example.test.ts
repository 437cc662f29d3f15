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

  it("or fails naming the package and the command that installs it", async () => {
    await expect(loadWindowSumExample("@exactly/no-such-example")).rejects.toThrow(
      "exactly demo kafka: runs the example @exactly/no-such-example, which is not installed; " +
        "install it next to @exactly/cli: npm install @exactly/no-such-example",
    );
  });
});
