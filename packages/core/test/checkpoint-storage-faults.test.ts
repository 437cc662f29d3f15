// The checkpoint storage's file system fills up, or turns read-only, while a job runs: the
// checkpoints of that time are declined (no checkpoint completes, so nothing is committed
// that recovery could not commit again), the job does not fail, and once space or write
// access returns it checkpoints again and ends exactly once. A real file system: a small
// tmpfs mounted for the test, which needs root (CI runs as root); without it the test fails
// as not checked, it never passes.

import { execFileSync } from "node:child_process";
import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  FileSystemCheckpointStorage,
  GeneratorSource,
  GenericWriteAheadSink,
  type LoggedRecords,
  type Logger,
  StreamJob,
  silentLogger,
} from "../src/index.ts";
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

/**
 * A write-ahead sink over memory: a checkpoint's rows and its committed mark land together
 * (as a sink whose marker lives beside the data does), so what the log holds is what lands.
 * Each record is padded, so the log fills pages and a write can be cut short by a full disk.
 */
class PaddedWriteAheadSink extends GenericWriteAheadSink<number, { i: number; pad: string }> {
  private readonly rows: { i: number; pad: string }[];
  private readonly marks: Set<string>;

  constructor(rows: { i: number; pad: string }[], marks: Set<string>) {
    super({
      committer: {
        isCommitted: async (sinkId, subtask, checkpointId) => marks.has(`${sinkId}/${subtask}/${checkpointId}`),
        commit: async (sinkId, subtask, checkpointId) => {
          marks.add(`${sinkId}/${subtask}/${checkpointId}`);
        },
      },
      codec: {
        encode: (i) => JSON.stringify({ i, pad: PAD }),
        decode: (line) => JSON.parse(line) as { i: number; pad: string },
      },
    });
    this.rows = rows;
    this.marks = marks;
  }

  protected async sendValues(): Promise<void> {
    throw new Error("sendAndCommit does both");
  }

  protected override async sendAndCommit(
    records: LoggedRecords<{ i: number; pad: string }>,
    checkpointId: number,
    subtask: number,
  ): Promise<void> {
    this.rows.push(...(await records.all()));
    this.marks.add(`${this.context.sinkId}/${subtask}/${checkpointId}`);
  }
}

const PAD = "x".repeat(97);

describe("a write-ahead sink's log on a full file system", () => {
  it("appends either land whole by the next sync or fail: a write the disk cut short is never taken as done", async () => {
    const dir = await smallFileSystem();
    const log = new FileSystemCheckpointStorage(join(dir, "checkpoints")).logStore("sink");
    const line = "y".repeat(3000); // not a multiple of a page, so some write meets the last free bytes
    let appended = 0;
    let synced = 0;
    let failure: NodeJS.ErrnoException | undefined;
    try {
      for (let i = 0; i < 2000; i++) {
        await log.append("0-1", [line]);
        appended += line.length + 1;
        // Appends are written behind; a sync (a checkpoint's) is what promises them.
        if (i % 50 === 49) {
          await log.sync("0-1");
          synced = appended;
        }
      }
      await log.sync("0-1");
    } catch (error) {
      failure = error as NodeJS.ErrnoException;
    }
    await log.close?.();
    expect(failure?.code).toBe("ENOSPC");
    // Everything a sync resolved for is in the file.
    expect(synced).toBeGreaterThan(0);
    expect((await stat(join(dir, "checkpoints", "logs", "sink", "0-1"))).size).toBeGreaterThanOrEqual(synced);
  });

  it("fails the attempt, restarts until space returns, and ends exactly once with every logged record whole", async () => {
    const dir = await smallFileSystem();
    const rows: { i: number; pad: string }[] = [];
    const marks = new Set<string>();
    const restarts: string[] = [];
    const logger: Logger = { info: () => {}, warn: (m) => restarts.push(m), error: () => {} };
    let completed = 0;
    const job = new StreamJob({
      name: "write-ahead-full-disk",
      parallelism: 2,
      checkpoint: { storage: join(dir, "checkpoints"), intervalMs: 50 },
      // Restarts close together, so a few happen while the disk is full and space returns well within the count.
      restart: { initialDelayMs: 100, maxDelayMs: 500 },
      logger,
      batchSize: 50,
    });
    job
      .fromSource(new GeneratorSource({ count: RECORDS, splits: 2, ratePerSecond: 4000, generate: (i) => i }))
      .sinkTo(() => new PaddedWriteAheadSink(rows, marks), { name: "wal" });
    const result = job.execute({ onComplete: () => completed++ });
    await waitFor("three completed checkpoints", () => completed >= 3);

    // Fill every block: each append of the log fails with ENOSPC, or is cut short at the last free byte.
    await writeFile(join(dir, "filler"), Buffer.alloc(2 * 1024 * 1024)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "ENOSPC") throw error;
    });
    await waitFor("two restarts on the full disk", () => restarts.filter((m) => m.includes("restarting")).length >= 2);
    await rm(join(dir, "filler"), { force: true });

    const outcome = await result;
    expect(outcome.restarts).toBeGreaterThanOrEqual(2);
    // Every row whole (a log line cut short would decode wrong or not at all) and each once.
    expect(rows.every((r) => r.pad === PAD)).toBe(true);
    expect(rows.map((r) => r.i).sort((a, b) => a - b)).toEqual(Array.from({ length: RECORDS }, (_, i) => i));
  });
});
