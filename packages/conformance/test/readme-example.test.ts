import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";

// The README's custom sink is the region of fixtures/ledger-sink.ts, which the conformance
// suite runs (base-classes/readme-ledger.conformance.test.ts): the README shows only code that passes it.
describe("README example", () => {
  it("is the code of the ledger sink the conformance suite runs", async () => {
    const readme = await readFile(new URL("../../../README.md", import.meta.url), "utf8");
    const fixture = await readFile(new URL("./fixtures/ledger-sink.ts", import.meta.url), "utf8");
    const region = /\/\/ #region readme-sink\n([\s\S]*?)\/\/ #endregion readme-sink/.exec(fixture)?.[1]?.trim();
    expect(region).toBeDefined();
    expect(readme).toContain(region as string);
  });
});
