// S3CheckpointStorage on a real S3 server, run against each S3 implementation the services
// provide: the contract FileSystemCheckpointStorage keeps (ids reserved, completion atomic
// and last, latest found by a new process, last K kept, logs), and two processes racing for
// one checkpoint: one wins, the other fails clearly.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { CheckpointMetadata } from "@exactly/core";
import { describe, expect, it } from "vitest";
import { CheckpointOwnershipError, S3CheckpointStorage } from "../../src/s3/index.ts";
import { listKeys, type S3Config, testBucket } from "./helpers.ts";

/** The suite, against the server `s3Config()` names (read inside each test, so a missing server fails it). */
export function s3CheckpointStorageSuite(server: string, s3Config: () => S3Config): void {
  describe(`S3CheckpointStorage on ${server}`, () => {
    const { bucket, s3 } = testBucket("checkpoints", s3Config);

    const fresh = async (retained?: number) => {
      await s3();
      const location = `s3://${bucket}/jobs/${randomBytes(3).toString("hex")}`;
      return {
        location,
        open: () => new S3CheckpointStorage({ location, connection: s3Config(), ...(retained ? { retained } : {}) }),
      };
    };

    function metadata(checkpointId: number, taskStates: Record<string, string>): CheckpointMetadata {
      return {
        checkpointId,
        timestamp: Date.now(),
        jobName: "t",
        stages: { src: { parallelism: 1 } },
        maxParallelism: 128,
        taskStates,
      };
    }

    async function checkpointWith(storage: S3CheckpointStorage, checkpointId: number, state: unknown, complete = true) {
      await storage.beginCheckpoint(checkpointId);
      const { handle } = await storage.writeTaskState(checkpointId, "src/0", state);
      if (complete) await storage.completeCheckpoint(metadata(checkpointId, { "src/0": handle }));
    }

    describe("S3CheckpointStorage", () => {
      it("makes a checkpoint visible only once complete, and a new process finds the latest complete one", async () => {
        const { open } = await fresh();
        const first = open();
        expect(await first.highestCheckpointId()).toBe(0);
        expect(await first.loadLatest()).toBeUndefined();
        await checkpointWith(first, 1, { offset: 10 });
        await checkpointWith(first, 2, { offset: 20 }, false); // state written, never completed
        first.close();
        const second = open();
        expect(await second.highestCheckpointId()).toBe(2);
        const latest = await second.loadLatest();
        expect(latest?.metadata.checkpointId).toBe(1);
        expect(latest?.metadata).not.toHaveProperty("owner");
        expect(latest?.states.get("src/0")).toEqual({ offset: 10 });
        second.close();
      });

      it("keeps the last K completed checkpoints and removes incomplete older ones", async () => {
        const { location, open } = await fresh(2);
        const storage = open();
        await checkpointWith(storage, 1, { n: 1 });
        await checkpointWith(storage, 2, { n: 2 }, false);
        await checkpointWith(storage, 3, { n: 3 });
        await checkpointWith(storage, 4, { n: 4 });
        expect((await storage.listCompleted()).map((m) => m.checkpointId)).toEqual([3, 4]);
        const prefix = location.slice(`s3://${bucket}/`.length);
        const dirs = new Set((await listKeys(await s3(), bucket, `${prefix}/`)).map((k) => k.split("/")[2]));
        expect([...dirs].sort()).toEqual(["chk-3", "chk-4"]);
        storage.close();
      });

      it("records a checkpoint as committed for tools, and retention removes the record with it", async () => {
        const { location, open } = await fresh(1);
        const storage = open();
        await checkpointWith(storage, 1, { n: 1 });
        await storage.markCommitted(1);
        await checkpointWith(storage, 2, { n: 2 });
        expect((await storage.inspect()).map((c) => [c.checkpointId, c.committed])).toEqual([[2, false]]);
        await storage.markCommitted(2);
        expect((await storage.inspect()).map((c) => [c.checkpointId, c.committed])).toEqual([[2, true]]);
        const prefix = location.slice(`s3://${bucket}/`.length);
        expect((await listKeys(await s3(), bucket, `${prefix}/`)).some((k) => k.includes("chk-1/"))).toBe(false);
        storage.close();
      });

      it("keeps a discarded checkpoint's id reserved", async () => {
        const { open } = await fresh();
        const storage = open();
        await checkpointWith(storage, 1, { n: 1 });
        await checkpointWith(storage, 2, { n: 2 }, false);
        await storage.discardCheckpoint(2);
        expect(await storage.highestCheckpointId()).toBe(2);
        expect((await storage.loadLatest())?.metadata.checkpointId).toBe(1);
        storage.close();
      });

      it("keeps write-ahead logs in segments and reads them back in order", async () => {
        const { open } = await fresh();
        const storage = open();
        const log = storage.logStore("sink/0");
        const line = (i: number) => `${i} ${"y".repeat(200)}`;
        const total = 60_000; // ~12 MB: more than one 8 MiB segment
        for (let i = 0; i < total; i += 1000)
          await log.append(
            "chk-1",
            Array.from({ length: 1000 }, (_, j) => line(i + j)),
          );
        await log.sync("chk-1");
        await log.append("chk-2", ["only"]);
        await log.sync("chk-2");
        const read: string[] = [];
        for await (const lines of open().logStore("sink/0").read("chk-1")) read.push(...lines);
        expect(read.length).toBe(total);
        expect(read.every((l, i) => l === line(i))).toBe(true);
        // As bytes, the same log: every line with its "\n", in order across the segments.
        const chunks: Uint8Array[] = [];
        for await (const chunk of open().logStore("sink/0").readBytes("chk-1")) chunks.push(chunk);
        expect(chunks.length).toBeGreaterThan(1);
        expect(Buffer.concat(chunks).toString()).toBe(read.map((l) => `${l}\n`).join(""));
        expect((await log.list()).sort()).toEqual(["chk-1", "chk-2"]);
        await log.delete("chk-1");
        expect(await log.list()).toEqual(["chk-2"]);
        storage.close();
      });

      it("lets a retried completion of its own checkpoint through, and refuses another process's", async () => {
        const { open } = await fresh();
        const mine = open();
        await mine.beginCheckpoint(1);
        await mine.beginCheckpoint(1); // a retry that finds its own reservation
        const { handle } = await mine.writeTaskState(1, "src/0", {});
        await mine.completeCheckpoint(metadata(1, { "src/0": handle }));
        await mine.completeCheckpoint(metadata(1, { "src/0": handle }));
        const theirs = open();
        await expect(theirs.beginCheckpoint(1)).rejects.toBeInstanceOf(CheckpointOwnershipError);
        await expect(theirs.completeCheckpoint(metadata(1, { "src/0": handle }))).rejects.toThrow(
          /completed by another process/,
        );
        mine.close();
        theirs.close();
      });
    });

    const racer = fileURLToPath(new URL("./fixtures/race-checkpoint.ts", import.meta.url));
    const run = promisify(execFile);

    async function race(location: string, mode: "begin" | "complete", checkpointId: number) {
      const startAt = Date.now() + 1500;
      const outcomes = await Promise.all(
        ["a", "b"].map(async (name) => {
          const { stdout } = await run(
            process.execPath,
            ["--conditions=@exactly/source", "--disable-warning=ExperimentalWarning", racer],
            {
              env: {
                ...process.env,
                RACE: JSON.stringify({ s3: s3Config(), location, checkpointId, startAt, mode, name }),
              },
            },
          );
          return JSON.parse(stdout.trim()) as { ok: boolean; name: string; code?: string; message?: string };
        }),
      );
      return outcomes;
    }

    describe("two processes racing for one checkpoint", () => {
      it.each(["begin", "complete"] as const)(
        "end with one winner and a clear error for the other (%s)",
        async (mode) => {
          const { location, open } = await fresh();
          if (mode === "complete") {
            // Both got past the reservation (one reserved it, the other never checked): only completion decides.
            const reserving = open();
            await reserving.beginCheckpoint(1);
            reserving.close();
          }
          const outcomes = await race(location, mode, 1);
          const winners = outcomes.filter((o) => o.ok);
          const losers = outcomes.filter((o) => !o.ok);
          expect(winners).toHaveLength(1);
          expect(losers).toHaveLength(1);
          expect(losers[0]?.code).toBe("CHECKPOINT_OWNERSHIP");
          expect(losers[0]?.message).toMatch(/by another process: two processes are running this job/);
          // The checkpoint a restart loads is the winner's, whole.
          const reader = open();
          const latest = await reader.loadLatest();
          expect(latest?.metadata.checkpointId).toBe(1);
          expect(latest?.states.get("src/0")).toEqual({ by: winners[0]?.name });
          reader.close();
        },
      );
    });
  });
}
