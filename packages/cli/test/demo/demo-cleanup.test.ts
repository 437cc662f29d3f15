// `exactly demo` without --out writes to a temp directory of its own, exactly-demo-XXXXXX under
// os.tmpdir(), and removes it however the run ends: after the check, on SIGTERM, on Ctrl-C
// (SIGINT to the whole process group) and when the run fails. Each test gives the demo a
// TMPDIR of its own, so what is left there is the demo's, and other tests' demos do not count.

import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { FileSystemCheckpointStorage } from "@exactly/core";
import { afterEach, describe, expect, it } from "vitest";
import { groupAlive, waitUntil } from "./demo-processes.ts";

const cli = fileURLToPath(new URL("../../../../test/e2e/fixtures/exactly-cli.ts", import.meta.url));

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `exactly demo args` as a process group of its own, with `tmp` as its TMPDIR. */
function startDemo(tmp: string, args: readonly string[]) {
  const child = spawn(process.execPath, ["--conditions=@exactly/source", cli, "demo", ...args], {
    detached: true,
    env: { ...process.env, TMPDIR: tmp },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stdout.resume();
  child.stderr.on("data", (chunk) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  const pgid = child.pid as number;
  cleanups.push(async () => {
    if (groupAlive(pgid)) process.kill(-pgid, "SIGKILL");
  });
  return { child, pgid, exited, stderr: () => stderr };
}

async function freshTmp(): Promise<string> {
  const tmp = await mkdtemp(join(tmpdir(), "exactly-demo-cleanup-"));
  cleanups.push(() => rm(tmp, { recursive: true, force: true }));
  return tmp;
}

/** The demo's output directories under `tmp`. */
async function demoDirs(tmp: string): Promise<string[]> {
  return (await readdir(tmp)).filter((name) => name.startsWith("exactly-demo-"));
}

/** Waits until the demo's worker has completed a checkpoint in its temp output: the run is under way. */
async function runningWithACheckpoint(tmp: string): Promise<string> {
  let out = "";
  await waitUntil("a completed checkpoint in the demo's temp output", async () => {
    const [dir] = await demoDirs(tmp);
    if (!dir) return false;
    out = join(tmp, dir);
    const storage = new FileSystemCheckpointStorage(join(out, ".checkpoints"));
    return (await storage.listCompleted().catch(() => [])).length > 0;
  });
  return out;
}

/** A run of about 10 s: long enough to be stopped while it runs. */
const RUNNING = ["--records", "200000", "--kills", "0", "--rate", "20000"];

describe("exactly demo leaves no temp output behind", () => {
  it("on SIGTERM to the demo: removes it, then ends by SIGTERM", async () => {
    const tmp = await freshTmp();
    const demo = startDemo(tmp, RUNNING);
    await runningWithACheckpoint(tmp);
    process.kill(demo.pgid, "SIGTERM");
    const { signal } = await demo.exited;
    expect(signal, demo.stderr()).toBe("SIGTERM");
    expect(demo.stderr()).toMatch(/stopped by SIGTERM; its temp output .* was removed/);
    await waitUntil("every process of the demo gone", () => !groupAlive(demo.pgid), 10_000);
    expect(await demoDirs(tmp)).toEqual([]);
  });

  it("on Ctrl-C (SIGINT to its process group): removes it, then ends by SIGINT", async () => {
    const tmp = await freshTmp();
    const demo = startDemo(tmp, RUNNING);
    await runningWithACheckpoint(tmp);
    process.kill(-demo.pgid, "SIGINT");
    const { signal } = await demo.exited;
    expect(signal, demo.stderr()).toBe("SIGINT");
    await waitUntil("every process of the demo gone", () => !groupAlive(demo.pgid), 10_000);
    expect(await demoDirs(tmp)).toEqual([]);
  });

  it("when the run fails: removes it, exit code 2", async () => {
    // The worker cannot serve its metrics on a port that is taken, and fails.
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as { port: number }).port;
    const tmp = await freshTmp();
    const demo = startDemo(tmp, [...RUNNING, "--metrics-port", String(port)]);
    const { code } = await demo.exited;
    expect(code, demo.stderr()).toBe(2);
    expect(demo.stderr()).toContain("the demo job stopped without finishing: listen EADDRINUSE");
    // The worker's failure reaches the user as that one line, not as its stack trace.
    expect(demo.stderr()).not.toMatch(/^\s+at /m);
    await waitUntil("every process of the demo gone", () => !groupAlive(demo.pgid), 10_000);
    expect(await demoDirs(tmp)).toEqual([]);
  });

  it("with --keep, on SIGTERM: keeps it and prints where", async () => {
    const tmp = await freshTmp();
    const demo = startDemo(tmp, [...RUNNING, "--keep"]);
    const out = await runningWithACheckpoint(tmp);
    process.kill(demo.pgid, "SIGTERM");
    const { signal } = await demo.exited;
    expect(signal, demo.stderr()).toBe("SIGTERM");
    expect(demo.stderr()).toContain(`stopped by SIGTERM; its output is kept in ${out}`);
    expect(await readFile(join(out, ".exactly-demo.json"), "utf8")).toContain('"records":200000');
  });
});
