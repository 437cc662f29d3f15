import { spawn } from "node:child_process";
import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { FileSystemCheckpointStorage } from "../src/index.ts";
import { tempDir } from "./helpers.ts";

const meta = (id: number, taskStates: Record<string, string>) => ({
  checkpointId: id,
  timestamp: 0,
  jobName: "t",
  stages: {},
  maxParallelism: 128,
  taskStates,
});

describe("FileSystemCheckpointStorage", () => {
  it("ignores a checkpoint whose metadata was never completed, and a torn metadata temp file", async () => {
    const dir = await tempDir();
    const storage = new FileSystemCheckpointStorage(dir);
    for (const id of [1, 2]) {
      await storage.beginCheckpoint(id);
      await storage.completeCheckpoint(meta(id, { "t/0": (await storage.writeTaskState(id, "t/0", { id })).handle }));
    }
    await storage.beginCheckpoint(3);
    await storage.writeTaskState(3, "t/0", { id: 3 });
    await writeFile(join(dir, "chk-3", "_metadata.tmp-999"), '{"checkpointId":3,"tas');
    const latest = await storage.loadLatest();
    expect(latest?.metadata.checkpointId).toBe(2);
    expect(latest?.states.get("t/0")).toEqual({ id: 2 });
    expect(await storage.highestCheckpointId()).toBe(3);
  });

  it("reads a write-ahead log back as lines and as the same bytes, in order, after it is synced and reopened", async () => {
    const dir = await tempDir();
    const log = new FileSystemCheckpointStorage(dir).logStore("sink/0");
    const line = (i: number) => `${i}\tzoë ${"y".repeat(100)}`;
    const total = 30_000; // ~3 MB: several chunks of a read
    for (let i = 0; i < total; i += 1000)
      await log.append(
        "0-1",
        Array.from({ length: 1000 }, (_, j) => line(i + j)),
      );
    await log.sync("0-1");
    const again = new FileSystemCheckpointStorage(dir).logStore("sink/0");
    const lines: string[] = [];
    for await (const batch of again.read("0-1")) lines.push(...batch);
    expect(lines.length).toBe(total);
    expect(lines.every((l, i) => l === line(i))).toBe(true);
    const chunks: Uint8Array[] = [];
    for await (const chunk of again.readBytes("0-1")) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(1);
    expect(Buffer.concat(chunks).toString()).toBe(lines.map((l) => `${l}\n`).join(""));
  });

  it("keeps the last K completed checkpoints", async () => {
    const dir = await tempDir();
    const storage = new FileSystemCheckpointStorage(dir, { retained: 2 });
    for (const id of [1, 2, 3, 4]) {
      await storage.beginCheckpoint(id);
      await storage.completeCheckpoint(meta(id, {}));
    }
    expect((await storage.listCompleted()).map((m) => m.checkpointId)).toEqual([3, 4]);
    expect((await readdir(dir)).sort()).toEqual(["chk-3", "chk-4"]);
  });

  it("always leaves the latest complete checkpoint loadable when the writer is SIGKILLed", async () => {
    const script = fileURLToPath(new URL("./fixtures/storage-writer.ts", import.meta.url));
    const dir = await tempDir();
    let previous = 0;
    for (let round = 0; round < 6; round++) {
      const child = spawn(process.execPath, ["--disable-warning=ExperimentalWarning", script, dir], {
        stdio: "ignore",
      });
      // Let it complete at least one more checkpoint, then kill it at some point of the next.
      const watcher = new FileSystemCheckpointStorage(dir);
      const completed = async () => (await watcher.listCompleted()).at(-1)?.checkpointId ?? 0;
      while ((await completed()) <= previous) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, (round * 7) % 23));
      child.kill("SIGKILL");
      await new Promise((r) => child.on("exit", r));
      const storage = new FileSystemCheckpointStorage(dir);
      const latest = await storage.loadLatest();
      expect(latest, `round ${round}: a complete checkpoint must load`).toBeDefined();
      const id = latest?.metadata.checkpointId as number;
      expect(id).toBeGreaterThanOrEqual(previous);
      for (const task of ["a/0", "a/1", "b/0"]) expect(latest?.states.get(task)).toMatchObject({ id, task });
      previous = id;
    }
    expect(previous).toBeGreaterThan(1);
  });
});
