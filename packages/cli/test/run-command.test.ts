// `exactly run <job module>` as its own process: SIGTERM stops it gracefully, with a final
// checkpoint whose output is committed, and exit code 0. What it says about bad modules.

import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { FileSystemCheckpointStorage } from "@exactly/core";
import { describe, expect, it } from "vitest";

const cli = fileURLToPath(new URL("../../../test/e2e/fixtures/exactly-cli.ts", import.meta.url));
// The job module the operating guide shows.
const jobModule = fileURLToPath(new URL("../../../docs/operating/job-module.ts", import.meta.url));
// A job module whose keyed stage "counter" is there with IDENTITY_JOB_COUNTER=1 only.
const identityJob = fileURLToPath(new URL("./fixtures/identity-job.ts", import.meta.url));
// A job module whose sink does not declare capabilities.fences.
const unfencedJob = fileURLToPath(new URL("./fixtures/unfenced-job.ts", import.meta.url));

/** `exactly run` in `dir`: the module writes ./out and ./checkpoints there. */
function startRun(dir: string, ...args: string[]) {
  return startRunWith({}, dir, ...args);
}

function startRunWith(env: Record<string, string>, dir: string, ...args: string[]) {
  const child = spawn(process.execPath, ["--conditions=@exactly/source", cli, "run", ...args], {
    cwd: dir,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exited, stderr: () => stderr };
}

/** Ids in the visible (committed) part files: in-progress files are hidden (`.name.inprogress`). */
async function committedIds(out: string): Promise<number[]> {
  const ids: number[] = [];
  for (const name of await readdir(out)) {
    if (name.startsWith(".")) continue;
    for (const line of (await readFile(join(out, name), "utf8")).split("\n")) {
      if (line) ids.push((JSON.parse(line) as { id: number }).id);
    }
  }
  return ids;
}

describe("exactly run", () => {
  it("stops on SIGTERM with a final checkpoint committed: the output is exactly what it read", async () => {
    const dir = await mkdtemp(join(tmpdir(), "exactly-run-"));
    const out = join(dir, "out");
    const run = startRun(dir, jobModule, "--log-format", "json");
    // Running: a few checkpoints have committed files.
    for (let i = 0; (await committedIds(out).catch(() => [])).length < 2000; i++) {
      if (i > 600) throw new Error(`no committed output after 60 s: ${run.stderr().slice(-2000)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    run.child.kill("SIGTERM");
    expect(await run.exited, run.stderr().slice(-2000)).toBe(0);

    const restored = await new FileSystemCheckpointStorage(join(dir, "checkpoints")).loadLatest();
    expect(restored?.metadata.final, "the last checkpoint is the final one a stop takes").toBe(true);
    // Its commits were done before the process exited, and the storage says so for tools.
    const inspected = await new FileSystemCheckpointStorage(join(dir, "checkpoints")).inspect();
    expect(inspected.filter((c) => c.committed).map((c) => c.checkpointId)).toEqual([restored?.metadata.checkpointId]);
    // Every id the sources emitted up to the final checkpoint, once; none after it. Split s
    // of the generator emits s, s + splits, s + 2 × splits, …
    const positions = [...(restored?.states ?? [])]
      .filter(([key]) => key.startsWith("source:ids/"))
      .flatMap(([, state]) => Object.entries(state as Record<string, number>));
    const expected: number[] = [];
    for (const [split, next] of positions) {
      for (let id = Number(split); id < next; id += positions.length) expected.push(id);
    }
    const ids = await committedIds(out);
    expect(positions, "the four splits of the guide's source").toHaveLength(4);
    expect(ids.length).toBeGreaterThanOrEqual(2000);
    expect(ids.sort((a, b) => a - b)).toEqual(expected.sort((a, b) => a - b));
    // Nothing left in progress.
    expect((await readdir(out)).filter((name) => name.endsWith(".inprogress"))).toEqual([]);
    const logs = run
      .stderr()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { level: string; msg: string });
    expect(logs.some((entry) => entry.msg.startsWith("SIGTERM: stopping"))).toBe(true);
    expect(logs.some((entry) => entry.msg === "job ended")).toBe(true);
  });

  it("exits with 2 and names the export when the module has no such function", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-run-"));
    const run = startRun(out, jobModule, "--export", "nothing");
    expect(await run.exited).toBe(2);
    expect(run.stderr()).toContain("no function export named nothing");
  });

  it("I9: refuses to run a sink that does not declare capabilities.fences as a shard, naming the sink, before it writes; runs it unsharded", async () => {
    const sharded = await mkdtemp(join(tmpdir(), "exactly-run-unfenced-"));
    const refused = startRun(sharded, unfencedJob, "--shard", "0/1");
    expect(await refused.exited).toBe(2);
    expect(refused.stderr()).toMatch(/shard: sink appender \(AppendingSink\) does not declare capabilities\.fences/);
    expect(await readdir(sharded)).not.toContain("out");

    const plain = await mkdtemp(join(tmpdir(), "exactly-run-unfenced-"));
    const run = startRun(plain, unfencedJob);
    expect(await run.exited, run.stderr()).toBe(0);
    const ids = (await readFile(join(plain, "out", "ids.txt"), "utf8")).split("\n").filter(Boolean).map(Number);
    expect(new Set(ids).size).toBe(300);
  });

  it("I10: refuses to start without a removed operator's checkpointed state, naming it, until --allow-non-restored-state names it", async () => {
    const dir = await mkdtemp(join(tmpdir(), "exactly-run-identity-"));
    const first = startRunWith({ IDENTITY_JOB_COUNTER: "1" }, dir, identityJob);
    expect(await first.exited, first.stderr().slice(-2000)).toBe(0);

    const refused = startRun(dir, identityJob);
    expect(await refused.exited, refused.stderr().slice(-2000)).toBe(2);
    expect(refused.stderr()).toMatch(/allowNonRestoredState: checkpoint \d+ holds the state of operator "counter"/);
    expect(refused.stderr()).toMatch(/--allow-non-restored-state counter/);

    const allowed = startRun(dir, identityJob, "--allow-non-restored-state", "counter");
    expect(await allowed.exited, allowed.stderr().slice(-2000)).toBe(0);
    expect(allowed.stderr()).toMatch(/dropping the state of operator "counter"/);
  });
});
