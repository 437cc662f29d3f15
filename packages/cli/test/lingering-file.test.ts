// `exactly lingering file` on the parts an exactly-once local file sink left when its job was
// SIGKILLed once a checkpoint was durable: what that checkpoint pre-committed is listed as
// such and spared by --abort, the rest is removed, and a restart from the checkpoint then
// commits every record exactly once.

import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import type { LingeringReport } from "../src/lingering/lingering-command.ts";

const cli = fileURLToPath(new URL("../../../test/e2e/fixtures/exactly-cli.ts", import.meta.url));
const job = fileURLToPath(new URL("./fixtures/local-file-job.ts", import.meta.url));
const node = ["--conditions=@exactly/source", "--disable-warning=ExperimentalWarning"];

function exactly(...args: string[]) {
  const run = spawnSync(process.execPath, [...node, cli, ...args], { encoding: "utf8" });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

function runJob(config: object, fault?: string): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, LOCAL_FILE_JOB: JSON.stringify(config) };
    if (fault) env.EXACTLY_FAULT = fault;
    else delete env.EXACTLY_FAULT;
    const child = spawn(process.execPath, [...node, job], { env, stdio: "ignore" });
    child.on("error", reject);
    child.on("exit", (code, signal) => resolve({ code, signal }));
  });
}

async function committedIds(out: string): Promise<number[]> {
  const ids: number[] = [];
  for (const name of await readdir(out)) {
    if (name.startsWith(".") || !name.startsWith("part-out-")) continue;
    for (const line of (await readFile(join(out, name), "utf8")).split("\n")) if (line) ids.push(Number(line));
  }
  return ids.sort((a, b) => a - b);
}

describe("exactly lingering file", () => {
  it("spares the parts a durable checkpoint pre-committed, removes the rest, and a restart commits every record once", async () => {
    const base = await mkdtemp(join(tmpdir(), "exactly-lingering-file-"));
    const config = {
      out: join(base, "out"),
      checkpoints: join(base, "checkpoints"),
      records: 6000,
      ratePerSecond: 4000,
    };
    const killed = await runJob(config, "after-checkpoint-durable@3");
    expect(killed.signal).toBe("SIGKILL");

    const listing = ["lingering", "file", "--directory", config.out, "--sink", "out", "--json"];
    const before = exactly(...listing, "--checkpoints", config.checkpoints);
    expect(before.code).toBe(1);
    const report = JSON.parse(before.stdout) as LingeringReport;
    const preCommitted = report.items.filter((i) => i.status === "pre-committed");
    expect(preCommitted.length).toBeGreaterThan(0);
    expect(preCommitted.every((i) => !i.abortable)).toBe(true);
    expect(report.items.length).toBeGreaterThan(preCommitted.length);

    // Without the checkpoints nothing tells what was pre-committed: --abort refuses.
    const refused = exactly(...listing, "--abort", "--yes");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("--checkpoints");

    const aborted = exactly(...listing, "--checkpoints", config.checkpoints, "--abort", "--yes");
    expect(aborted.code).toBe(1);
    const after = JSON.parse(aborted.stdout) as LingeringReport;
    expect(after.items.filter((i) => i.aborted).length).toBe(report.items.length - preCommitted.length);
    const left = JSON.parse(exactly(...listing, "--checkpoints", config.checkpoints).stdout) as LingeringReport;
    expect(left.items.map((i) => i.id).sort()).toEqual(preCommitted.map((i) => i.id).sort());

    // I10: the job with its sink renamed is refused rather than drop what "out" pre-committed,
    // and lingering lists that work as an orphan only a sink of that name (or renamed from it) commits.
    const renamed = await runJob({ ...config, sinkName: "renamed" });
    expect(renamed.code).not.toBe(0);
    const orphan = exactly(
      "lingering",
      "file",
      "--directory",
      config.out,
      "--sink",
      "out",
      "--checkpoints",
      config.checkpoints,
    );
    expect(orphan.stdout).toMatch(
      /pre-committed by checkpoint\(s\) \d+: a restart of the job with this sink \(or a sink declared renamedFrom its name\) commits it/,
    );

    const finished = await runJob(config);
    expect(finished.code).toBe(0);
    expect(await committedIds(config.out)).toEqual(Array.from({ length: config.records }, (_, i) => i));
    expect(exactly(...listing).code).toBe(0);
  });

  it("needs the sink's name or its part prefix", () => {
    const run = exactly("lingering", "file", "--directory", tmpdir());
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--sink");
  });
});
