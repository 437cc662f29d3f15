import { mkdir, mkdtemp, readdir, readFile, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ArraySource,
  ConfigurationError,
  DeliveryGuarantee,
  JobFailedError,
  RecordWriteError,
  StreamJob,
  silentLogger,
} from "@exactly/core";
import { describe, expect, it } from "vitest";
import { localFileSink, UnsafeBucketPathError, validateBucket } from "../src/index.ts";
import { idCountsInFiles, listOutput } from "./helpers.ts";

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
    const counts = await idCountsInFiles(visible);
    expect(counts.size).toBe(2000);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
  });
});

/** Runs `records` through a local file sink into `directory`, with its own checkpoint folder. */
async function runInto<T>(
  directory: string,
  checkpoints: string,
  records: readonly T[],
  sink: Partial<Parameters<typeof localFileSink<T>>[0]> = {},
): Promise<unknown> {
  const job = new StreamJob({
    name: "run",
    checkpoint: { storage: checkpoints, intervalMs: 1000 },
    restart: { maxRestarts: 0 },
    logger: silentLogger,
  });
  job
    .fromSource(new ArraySource(records, { name: "rows" }))
    .sinkTo(() => localFileSink<T>({ directory, ...sink }), { name: "files" });
  return job.execute().then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe("I8: a fresh run into an output folder another run used", () => {
  it.each([DeliveryGuarantee.EXACTLY_ONCE, DeliveryGuarantee.AT_LEAST_ONCE])(
    "keeps both runs' records (%s)",
    async (guarantee) => {
      const root = await temp();
      const out = join(root, "out");
      // Lines of the same length, so the two runs' first parts are the same size.
      const runA = Array.from({ length: 1000 }, (_, i) => ({ id: 1000 + i }));
      const runB = Array.from({ length: 1000 }, (_, i) => ({ id: 2000 + i }));
      expect(await runInto(out, join(root, "checkpoints-a"), runA, { guarantee })).toBeUndefined();
      expect(await runInto(out, join(root, "checkpoints-b"), runB, { guarantee })).toBeUndefined();
      const { visible, hidden } = await listOutput(out);
      expect(hidden).toEqual([]);
      const counts = await idCountsInFiles(visible);
      expect(counts.size).toBe(2000);
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
    },
  );
});

describe("encoded lines", () => {
  const failsNaming = async (records: readonly unknown[], encoder?: (r: unknown) => string) => {
    const root = await temp();
    const out = join(root, "out");
    const error = await runInto(out, join(root, "checkpoints"), records, encoder ? { encoder } : {});
    expect(error).toBeInstanceOf(JobFailedError);
    const cause = (error as JobFailedError).cause as RecordWriteError;
    expect(cause).toBeInstanceOf(RecordWriteError);
    expect(cause.message).toContain("rows[0]@1");
    // Nothing of the failed checkpoint is published, not even the good record before it.
    expect((await listOutput(out).catch(() => ({ visible: [] }))).visible).toEqual([]);
  };

  it("fails the job on an undefined record with the default encoder, naming the record", async () => {
    await failsNaming([{ id: 1 }, undefined]);
  });

  it("fails the job on an encoder output with a newline, naming the record", async () => {
    await failsNaming([{ id: 1 }, { id: 2 }], (r) => ((r as { id: number }).id === 2 ? "two\nlines" : "one"));
  });

  it("fails the job on an encoder output with CRLF, naming the record", async () => {
    await failsNaming([{ id: 1 }, { id: 2 }], (r) => ((r as { id: number }).id === 2 ? "two\r\n" : "one"));
  });

  it("fails the job on an encoder output that is not a string, naming the record", async () => {
    await failsNaming([{ id: 1 }, { id: 2 }], (r) =>
      (r as { id: number }).id === 2 ? (2 as unknown as string) : "one",
    );
  });
});

describe("I8: bucket directories on disk", () => {
  it("fails the job on a bucket path segment longer than a file name can be, naming the record", async () => {
    const root = await temp();
    const out = join(root, "out");
    const error = await runInto(out, join(root, "checkpoints"), [{ day: "ok" }, { day: "d".repeat(256) }], {
      bucketAssigner: (r: { day: string }) => r.day,
    });
    expect(error).toBeInstanceOf(JobFailedError);
    const cause = (error as JobFailedError).cause as RecordWriteError;
    expect(cause).toBeInstanceOf(RecordWriteError);
    expect(cause.message).toContain("rows[0]@1");
    expect(cause.cause).toBeInstanceOf(UnsafeBucketPathError);
  });

  it("refuses a bucket directory that is a symlink out of the base, naming the record, and writes nothing there", async () => {
    const root = await temp();
    const out = join(root, "out");
    const elsewhere = join(root, "elsewhere");
    await mkdir(out, { recursive: true });
    await mkdir(elsewhere);
    await symlink(elsewhere, join(out, "day"));
    const error = await runInto(out, join(root, "checkpoints"), [{ day: "day" }], {
      bucketAssigner: (r: { day: string }) => r.day,
    });
    expect(error).toBeInstanceOf(JobFailedError);
    const cause = (error as JobFailedError).cause as RecordWriteError;
    expect(cause).toBeInstanceOf(RecordWriteError);
    expect(cause.message).toContain("rows[0]@0");
    expect(cause.cause).toBeInstanceOf(UnsafeBucketPathError);
    expect(await readdir(elsewhere)).toEqual([]);
  });

  it("accepts a base directory that is itself a symlink", async () => {
    const root = await temp();
    const real = join(root, "real");
    await mkdir(real);
    await symlink(real, join(root, "out"));
    expect(await runInto(join(root, "out"), join(root, "checkpoints"), [{ id: 1 }])).toBeUndefined();
    const { visible } = await listOutput(real);
    expect(visible).toHaveLength(1);
    expect(await readFile(visible[0] as string, "utf8")).toBe('{"id":1}\n');
  });
});
