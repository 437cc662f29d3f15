import { mkdtemp, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ArraySource,
  ConfigurationError,
  JobFailedError,
  RecordWriteError,
  StreamJob,
  silentLogger,
} from "@exactly/core";
import { describe, expect, it } from "vitest";
import { localFileSink, UnsafeBucketPathError, validateBucket } from "../src/index.ts";
import { idCounts, listOutput } from "./helpers.ts";

const temp = () => mkdtemp(join(tmpdir(), "exactly-file-"));

describe("bucket paths", () => {
  it.each(["../escape", "a/../../escape", "/etc", "a/.hidden", "a\0b", "C:\\x"])("rejects %j", (bucket) => {
    expect(() => validateBucket(bucket)).toThrow(UnsafeBucketPathError);
  });

  it.each([
    ["", ""],
    ["2026-11-30", "2026-11-30"],
    ["a/b/", join("a", "b")],
    ["a/./b", join("a", "b")],
  ])("accepts %j as %j", (bucket, expected) => {
    expect(validateBucket(bucket)).toBe(expected);
  });

  it("fails the job on a record whose bucket leaves the base, naming the record, and writes nothing outside", async () => {
    const root = await temp();
    const base = join(root, "base");
    const job = new StreamJob({
      name: "escape",
      checkpoint: { storage: join(root, "checkpoints"), intervalMs: 1000 },
      restart: { maxRestarts: 0 },
      logger: silentLogger,
    });
    job
      .fromSource(
        new ArraySource(
          [
            { id: 1, day: "ok" },
            { id: 2, day: "../../outside" },
          ],
          { name: "rows" },
        ),
      )
      .sinkTo(() => localFileSink({ directory: base, bucketAssigner: (r: { day: string }) => r.day }), {
        name: "files",
      });
    const error = await job.execute().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobFailedError);
    const cause = (error as JobFailedError).cause as RecordWriteError;
    expect(cause).toBeInstanceOf(RecordWriteError);
    expect(cause.message).toContain("rows[0]@1");
    expect(cause.cause).toBeInstanceOf(UnsafeBucketPathError);
    expect(await readdir(root)).not.toContain("outside");
    expect(await readdir(join(root, ".."))).not.toContain("outside");
    expect((await listOutput(base)).visible).toEqual([]);
  });

  it("refuses an unsafe part prefix, naming the setting", () => {
    const error = (() => {
      try {
        localFileSink({ directory: "/tmp", partPrefix: "../x" });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("partPrefix");
  });
});

describe("rolling", () => {
  it("rolls parts by size within a checkpoint and publishes them all", async () => {
    const out = await temp();
    const job = new StreamJob({
      name: "roll",
      checkpoint: { storage: join(out, ".checkpoints"), intervalMs: 1000 },
      logger: silentLogger,
    });
    job
      .fromSource(new ArraySource(Array.from({ length: 2000 }, (_, id) => ({ id }))))
      .sinkTo(() => localFileSink({ directory: out, rollingPolicy: { maxPartBytes: 4096 }, partSuffix: ".jsonl" }), {
        name: "files",
      });
    await job.execute();
    const { visible, hidden } = await listOutput(out);
    expect(hidden).toEqual([]);
    expect(visible.length).toBeGreaterThan(5);
    expect(visible.every((f) => f.endsWith(".jsonl"))).toBe(true);
    const counts = await idCounts(visible);
    expect(counts.size).toBe(2000);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
  });
});
