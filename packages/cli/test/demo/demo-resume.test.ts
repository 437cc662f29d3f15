// The whole demo process tree SIGKILLed from outside (as a host crash or an OOM kill ends
// it), then the same command started again: it resumes from the latest complete checkpoint
// in --out and the whole history is exactly once. And what --out may hold for a run to start.

import { spawn } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { FileSystemCheckpointStorage } from "@exactly/core";
import { runExactly } from "@exactly/testkit/run-cli";
import { afterEach, describe, expect, it, vi } from "vitest";
import { groupAlive, waitUntil } from "./demo-processes.ts";

const cli = fileURLToPath(new URL("../../../../test/e2e/fixtures/exactly-cli.ts", import.meta.url));
const RECORDS = 100_000;

/** `exactly demo` as a process group of its own (the demo and its worker), so the test can kill all of it. */
function startDemo(out: string) {
  const args = ["demo", "--out", out, "--records", String(RECORDS), "--kills", "0", "--rate", "20000", "--json"];
  const child = spawn(process.execPath, ["--conditions=@exactly/source", cli, ...args], {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exited, output: () => ({ stdout, stderr }) };
}

describe("exactly demo after its whole process tree is SIGKILLed", () => {
  it("resumes from the latest complete checkpoint in --out and ends exactly once", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-demo-resume-"));
    const first = startDemo(out);
    const storage = new FileSystemCheckpointStorage(join(out, ".checkpoints"));
    await waitUntil(
      "two completed checkpoints",
      async () => (await storage.listCompleted().catch(() => [])).length >= 2,
    );
    const pgid = first.child.pid as number;
    process.kill(-pgid, "SIGKILL");
    await first.exited;
    await waitUntil("every process of the demo gone", () => !groupAlive(pgid));
    const survived = (await storage.listCompleted()).map((m) => m.checkpointId);
    expect(survived.length).toBeGreaterThanOrEqual(2);

    const second = startDemo(out);
    const code = await second.exited;
    const { stdout, stderr } = second.output();
    expect(code, stderr).toBe(0);
    const summary = JSON.parse(stdout.trim().split("\n").at(-1) as string);
    expect(summary).toMatchObject({
      resumed: true,
      committed: RECORDS,
      lost: 0,
      duplicated: 0,
      phantom: 0,
      keysWithBadSequence: 0,
      ok: true,
    });
    // It resumed from a checkpoint the killed run completed, not from the start.
    expect(survived).toContain(summary.resumedFromCheckpoint);
    expect(summary.resumedFromCheckpoint).toBeGreaterThanOrEqual(Math.max(...survived));
  });
});

describe("what --out may hold", () => {
  afterEach(() => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
  });

  it("refuses a directory with files that are not a demo's", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-demo-foreign-"));
    await writeFile(join(out, "notes.txt"), "mine\n");
    await expect(runExactly("demo", "--out", out, "--records", "100", "--json")).rejects.toThrow(
      /not empty and holds no demo run/,
    );
  });

  it("refuses a plain file, naming --out, instead of a raw EEXIST", async () => {
    const file = join(await mkdtemp(join(tmpdir(), "exactly-demo-file-")), "out.txt");
    await writeFile(file, "not a directory\n");
    await expect(runExactly("demo", "--out", file, "--records", "100", "--json")).rejects.toThrow(
      `--out: ${file} is a file, not a directory`,
    );
  });

  it("refuses to resume a run of other settings, naming them", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-demo-other-"));
    const printed = await runExactly("demo", "--out", out, "--records", "2000", "--json");
    expect(JSON.parse(printed.at(-1) as string)).toMatchObject({ resumed: false, committed: 2000, ok: true });
    await expect(runExactly("demo", "--out", out, "--records", "3000", "--json")).rejects.toThrow(
      /other settings \(records: 2000 before, 3000 now\)/,
    );
  });

  it("a finished run started again resumes from its last checkpoint and adds nothing", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-demo-again-"));
    await runExactly("demo", "--out", out, "--records", "2000", "--json");
    const printed = await runExactly("demo", "--out", out, "--records", "2000", "--json");
    expect(JSON.parse(printed.at(-1) as string)).toMatchObject({
      resumed: true,
      committed: 2000,
      lost: 0,
      duplicated: 0,
      ok: true,
    });
  });
});
