// bin/exactly.js on a Node older than package.json's engines field: one line naming the Node
// needed and the one running, exit code 2, before anything version-specific is loaded (the
// built CLI fails obscurely there). The test runs this Node as if it were an older one.

import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const bin = fileURLToPath(new URL("../bin/exactly.js", import.meta.url));
const engines = (
  JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    engines: { node: string };
  }
).engines.node;

/** bin/exactly.js with process.versions.node set to `version` before it runs. */
function exactlyOn(version: string, ...args: string[]) {
  const pretend = `Object.defineProperty(process.versions, "node", { value: ${JSON.stringify(version)} });`;
  const run = spawnSync(
    process.execPath,
    [`--import=data:text/javascript,${encodeURIComponent(pretend)}`, bin, ...args],
    { encoding: "utf8" },
  );
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe("exactly on a Node older than its engines field", () => {
  it.each(["20.11.1", "22.11.0"])("%s: names the Node needed in one line, exit code 2", (version) => {
    const run = exactlyOn(version, "demo", "--records", "10");
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toBe(`exactly needs Node.js ${engines}, and this is Node.js ${version}: install a newer one\n`);
  });

  it("the engines field is one the check reads: >=major.minor", () => {
    expect(engines).toMatch(/^>=\d+\.\d+(\.\d+)?$/);
  });

  it.each(["22.12.0", "24.0.0"])("%s: not refused", (version) => {
    expect(exactlyOn(version, "--version").stderr).not.toContain("exactly needs Node.js");
  });
});
