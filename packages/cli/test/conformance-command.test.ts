// `exactly conformance` as a sink author runs it: a failure names the command that replays
// it, and that command fails the same way; passed scenarios leave no scratch folder, failed
// ones are kept and listed with their size; --json writes the report; --help names the
// scenarios --only takes.

import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SCENARIOS } from "@exactly/conformance";
import { afterAll, describe, expect, it } from "vitest";

const cli = fileURLToPath(new URL("../../../test/e2e/fixtures/exactly-cli.ts", import.meta.url));
const toySink = fileURLToPath(new URL("../../conformance/test/fixtures/toy-sink.ts", import.meta.url));

const made: string[] = [];
afterAll(async () => {
  for (const dir of made) await rm(dir, { recursive: true, force: true });
});

/** Runs the CLI with its own temp dir, so the scratch folders it leaves are the ones counted. */
function exactly(temp: string, cwd: string, ...args: string[]) {
  const run = spawnSync(process.execPath, ["--conditions=@exactly/source", cli, ...args], {
    encoding: "utf8",
    cwd,
    env: { ...process.env, TMPDIR: temp, EXACTLY_CONFORMANCE_SEED: "" },
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** A definition module, as an author writes one, of the toy sink: `toyDefinition(<broken>)`. */
async function toySinkModule(broken?: string): Promise<{ dir: string; temp: string; module: string }> {
  const dir = await mkdtemp(join(tmpdir(), "exactly-conformance-cli-"));
  made.push(dir);
  const temp = join(dir, "tmp");
  await mkdir(temp);
  const module = broken ? "wrong.conformance.mjs" : "toy.conformance.mjs";
  await writeFile(
    join(dir, module),
    `const { toyDefinition } = await import(${JSON.stringify(toySink)});\n` +
      `export const definition = toyDefinition(${broken ? JSON.stringify(broken) : ""});\n`,
  );
  return { dir, temp, module };
}

describe("exactly conformance", () => {
  it("--workers n runs every scenario's job with the sink's subtasks on n threads", async () => {
    const { dir, temp, module } = await toySinkModule();
    const exercised = (...flags: string[]) => {
      const run = exactly(temp, dir, "conformance", module, "--only", "clean-run", "--json", "-", ...flags);
      expect(run.code, run.stderr).toBe(0);
      const [scenario] = JSON.parse(run.stdout).scenarios;
      expect(scenario.verdict).toBe("passed");
      return scenario.exercised as string;
    };
    expect(exercised("--workers", "2")).toContain("subtasks on threads");
    expect(exercised()).not.toContain("subtasks on threads");
  });

  it("--help lists the scenario names --only takes", () => {
    const run = exactly(tmpdir(), process.cwd(), "conformance", "--help");
    expect(run.code).toBe(0);
    const help = run.stdout.replace(/\s+/g, " ");
    for (const name of SCENARIOS) expect(help).toContain(name);
  });

  it("prints the command that replays a failure, keeps only the failed scratch folder, and writes --json", async () => {
    const { dir, temp, module } = await toySinkModule("ignores-referenced");
    const report = join(dir, "report.json");
    const run = exactly(
      temp,
      dir,
      "conformance",
      module,
      "--seed",
      "5",
      "--only",
      "clean-run,restore-across-owners",
      "--json",
      report,
    );
    expect(run.code, run.stdout + run.stderr).toBe(1);
    const replay = `exactly conformance ${module} --seed 5 --only restore-across-owners`;
    expect(run.stdout).toContain(`replay: ${replay}`);
    expect(run.stdout).toMatch(/^\s+- lost \d+/m);

    // The passed scenario's folder is gone; the failed one's is kept and listed with its size.
    const left = (await readdir(temp)).filter((name) => name.startsWith("exactly-conformance-"));
    expect(left).toHaveLength(1);
    expect(run.stdout).toMatch(
      new RegExp(
        `scratch folders of failed scenarios[^\\n]*\\n\\s+${join(temp, left[0] as string)}\\s+[\\d.]+ (B|kB|MB)`,
      ),
    );

    const json = JSON.parse(await readFile(report, "utf8"));
    expect(json).toMatchObject({ outcome: "failed", seed: 5, profile: "ci" });
    expect(json.scenarios.map((s: { scenario: string; verdict: string }) => [s.scenario, s.verdict])).toEqual([
      ["clean-run", "passed"],
      ["restore-across-owners", "failed"],
    ]);
    const failed = json.scenarios[1];
    expect(failed).toMatchObject({ seed: 5, replay, scratchDir: join(temp, left[0] as string) });
    expect(failed.details.some((d: string) => /^lost/.test(d))).toBe(true);
    expect(failed.exercised).toContain("pending work of an index another subtask cleans up");

    // The printed command replays the same plan, and fails the same way.
    const again = exactly(temp, dir, ...replay.split(" ").slice(1));
    expect(again.code, again.stdout + again.stderr).toBe(1);
    expect(again.stdout).toMatch(/restore-across-owners\s+failed/);
    expect(again.stdout).toContain(`faults: ${failed.faults.join(" → ")}`);
    expect(again.stdout).toMatch(/^\s+- lost \d+/m);
  });
});
