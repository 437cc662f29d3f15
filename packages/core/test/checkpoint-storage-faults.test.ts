// The checkpoint storage's file system fills up, or turns read-only, while a job runs: the
// checkpoints of that time are declined (no checkpoint completes, so nothing is committed
// that recovery could not commit again), the job does not fail, and once space or write
// access returns it checkpoints again and ends exactly once. A real file system: a small
// tmpfs mounted for the test, which needs root (CI runs as root); without it the test fails
// as not checked, it never passes.

import { execFileSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GeneratorSource, StreamJob, silentLogger } from "../src/index.ts";
import { MemorySink, MemoryStore } from "./helpers.ts";

const RECORDS = 24_000;
const mounted: string[] = [];

async function smallFileSystem(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "exactly-small-fs-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", dir], { stdio: "pipe" });
  } catch (error) {
    throw new Error(`not checked: cannot mount a 1 MiB tmpfs at ${dir} (this test needs root): ${String(error)}`);
  }
  mounted.push(dir);
  return dir;
}

async function waitFor(what: string, check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

afterEach(() => {
  for (const dir of mounted.splice(0)) {
    execFileSync("mount", ["-o", "remount,rw", dir], { stdio: "pipe" });
    execFileSync("umount", [dir], { stdio: "pipe" });
  }
});

describe("checkpoint storage full or read-only", () => {
  it.each([
    [
      "full",
      async (dir: string) => {
        // Fill every block: the write fails with ENOSPC once the file system is full.
        await writeFile(join(dir, "filler"), Buffer.alloc(2 * 1024 * 1024)).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== "ENOSPC") throw error;
        });
      },
      async (dir: string) => rm(join(dir, "filler"), { force: true }),
    ],
    [
      "read-only",
      async (dir: string) => {
        execFileSync("mount", ["-o", "remount,ro", dir], { stdio: "pipe" });
      },
      async (dir: string) => {
        execFileSync("mount", ["-o", "remount,rw", dir], { stdio: "pipe" });
      },
    ],
  ])("%s: checkpoints are declined, the job goes on, and ends exactly once", async (_kind, breakIt, repairIt) => {
    const dir = await smallFileSystem();
    const store = new MemoryStore();
    const events: string[] = [];
    const reasons: string[] = [];
    const job = new StreamJob({
      name: "storage-faults",
      parallelism: 2,
      checkpoint: { storage: join(dir, "checkpoints"), intervalMs: 50 },
      restart: { maxRestarts: 0 },
      logger: silentLogger,
      batchSize: 200,
    });
    job
      .fromSource(new GeneratorSource({ count: RECORDS, splits: 2, ratePerSecond: 4000, generate: (i) => i }))
      .sinkTo(() => new MemorySink<number>(store), { name: "mem" });
    const result = job.execute({
      onComplete: () => events.push("complete"),
      onDeclined: (_id, reason) => {
        events.push("declined");
        reasons.push(reason);
      },
    });
    await waitFor("three completed checkpoints", () => events.filter((e) => e === "complete").length >= 3);

    await breakIt(dir);
    const brokenAt = events.length;
    await waitFor(
      "three declined checkpoints",
      () => events.slice(brokenAt).filter((e) => e === "declined").length >= 3,
    );
    // While the storage is broken no checkpoint completes, so nothing new is committed.
    expect(events.slice(brokenAt)).not.toContain("complete");
    // The storage's own error, named (ENOSPC; on a read-only mount EROFS, or ENOENT from mkdir).
    expect(reasons.at(-1)).toMatch(/^checkpoint storage failed: .*\bE[A-Z]+\b/);

    await repairIt(dir);
    const { restarts } = await result;
    expect(restarts).toBe(0);
    expect(events.slice(brokenAt)).toContain("complete");
    expect([...store.committed].sort((a, b) => (a as number) - (b as number))).toEqual(
      Array.from({ length: RECORDS }, (_, i) => i),
    );
    expect(store.open.size + store.prepared.size).toBe(0);
  });
});
