// The S3 file sink's behaviour on a real S3 server, run against each S3 implementation the
// services provide (they differ where it matters): keys that stay inside the prefix, part
// files of several upload parts, recommits settled by the object, lost and foreign objects
// named loudly, lingering uploads cleaned up by subtask, and a job SIGKILLed while a part uploads.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import {
  ArraySource,
  ConfigurationError,
  DeliveryGuarantee,
  JobFailedError,
  RecordWriteError,
  type Sink,
  StreamJob,
  silentLogger,
} from "@exactly/core";
import { withRetry } from "@exactly/core/internal";
import { describe, expect, it } from "vitest";
import { PartExistsError, PartLostError, UnsafeBucketPathError } from "../../src/index.ts";
import { MIN_PART_BYTES, S3RecoverableWriter, s3FileSink } from "../../src/s3/index.ts";
import type { S3JobConfig } from "./fixtures/s3-job.ts";
import { idCountsUnder, listKeys, openUploads, readObject, type S3Config, s3Client, testBucket } from "./helpers.ts";

const temp = () => mkdtemp(join(tmpdir(), "exactly-s3-"));

const fixture = fileURLToPath(new URL("./fixtures/s3-job.ts", import.meta.url));

function startJob(config: S3JobConfig, fault?: string) {
  const child = spawn(
    process.execPath,
    ["--conditions=@exactly/source", "--disable-warning=ExperimentalWarning", fixture],
    {
      env: { ...process.env, S3_JOB: JSON.stringify(config), EXACTLY_FAULT: fault ?? "" },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal, stderr })),
  );
  return { child, exited };
}

/** Runs `records` through the sink `make` builds, with no restart; the job's error, or undefined. */
export async function runS3Job<T>(make: () => Sink<T>, records: readonly T[]): Promise<unknown> {
  const job = new StreamJob({
    name: "s3-settings",
    checkpoint: { storage: join(await temp(), "checkpoints"), intervalMs: 1000 },
    restart: { maxRestarts: 0 },
    logger: silentLogger,
  });
  job.fromSource(new ArraySource(records, { name: "rows" })).sinkTo(make, { name: "files" });
  return job.execute().then(
    () => undefined,
    (e: unknown) => e,
  );
}

/** The ConfigurationError in an error's cause chain, if any. */
export function configurationErrorIn(error: unknown): ConfigurationError | undefined {
  for (let e = error; e !== undefined && e !== null; e = (e as { cause?: unknown }).cause) {
    if (e instanceof ConfigurationError) return e;
  }
  return undefined;
}

/** The suite, against the server `s3Config()` names (read inside each test, so a missing server fails it). */
const PAD = "p".repeat(1000);
/** Lines of PAD that fill one 5 MiB upload part. */
const LINES_PER_PART = Math.ceil(MIN_PART_BYTES / 1000);

/** A part closed for commit whose data spans two upload parts, and the text it holds. */
async function closedTwoUploadParts(w: S3RecoverableWriter, name: string) {
  const open = await w.openPart({ bucket: "", name });
  let expected = "";
  for (let line = 0; line < LINES_PER_PART + 10; line++) {
    const text = `{"id":${line},"pad":"${PAD}"}\n`;
    expected += text;
    await open.append(text);
  }
  return { closed: await open.closeForCommit(), expected };
}

export function s3SinkSuite(server: string, s3Config: () => S3Config): void {
  describe(`S3 file sink on ${server}`, () => {
    const { bucket, s3 } = testBucket("sink", s3Config);

    function writer(prefix: string): S3RecoverableWriter {
      return new S3RecoverableWriter({ bucket, prefix, connection: s3Config(), partSizeBytes: MIN_PART_BYTES });
    }

    function settingOf(make: () => unknown): string | undefined {
      try {
        make();
      } catch (error) {
        return error instanceof ConfigurationError ? error.setting : `not a ConfigurationError: ${String(error)}`;
      }
      return undefined;
    }

    describe("a bucket the server does not have", () => {
      it.each([DeliveryGuarantee.EXACTLY_ONCE, DeliveryGuarantee.AT_LEAST_ONCE])(
        "is refused when the sink opens, naming the setting (%s)",
        async (guarantee) => {
          const missing = `exactly-missing-${randomBytes(4).toString("hex")}`;
          const error = await runS3Job(
            () => s3FileSink({ bucket: missing, prefix: "p", connection: s3Config(), guarantee }),
            [{ id: 1 }],
          );
          const refusal = configurationErrorIn(error);
          expect(refusal?.setting).toBe("bucket");
          expect(refusal?.message).toContain(missing);
        },
      );
    });

    describe("a fresh run into a prefix another run used", () => {
      // A bucket of its own: tests of keys check that nothing lands outside their prefix in the suite's.
      const { bucket, s3 } = testBucket("reused", s3Config);
      it.each([DeliveryGuarantee.EXACTLY_ONCE, DeliveryGuarantee.AT_LEAST_ONCE])(
        "keeps both runs' records (%s)",
        async (guarantee) => {
          const s3client = await s3();
          const prefix = `reused-${randomBytes(3).toString("hex")}`;
          // Lines of the same length, so the two runs' first parts are the same size; each run has its own checkpoints.
          for (const first of [1000, 2000]) {
            const records = Array.from({ length: 1000 }, (_, i) => ({ id: first + i }));
            const error = await runS3Job(
              () => s3FileSink({ bucket, prefix, connection: s3Config(), guarantee }),
              records,
            );
            expect(error).toBeUndefined();
          }
          const counts = await idCountsUnder(s3client, bucket, `${prefix}/`);
          expect(counts.size).toBe(2000);
          expect([...counts.values()].every((n) => n === 1)).toBe(true);
        },
      );
    });

    describe("records the sink cannot write", () => {
      const failsNaming = async (records: readonly { id: number; day?: string }[], options: object) => {
        const s3client = await s3();
        const prefix = `refused-${randomBytes(3).toString("hex")}`;
        const error = await runS3Job(() => s3FileSink({ bucket, prefix, connection: s3Config(), ...options }), records);
        expect(error).toBeInstanceOf(JobFailedError);
        const cause = (error as JobFailedError).cause as RecordWriteError;
        expect(cause).toBeInstanceOf(RecordWriteError);
        expect(cause.message).toContain("rows[0]@1");
        // Nothing of the failed checkpoint is published, not even the good record before it.
        expect(await listKeys(s3client, bucket, `${prefix}/`)).toEqual([]);
        expect(await openUploads(s3client, bucket, `${prefix}/`)).toEqual([]);
        return cause;
      };

      it("fails the job on an encoder line with a newline, naming the record", async () => {
        await failsNaming([{ id: 1 }, { id: 2 }], {
          encoder: (r: { id: number }) => (r.id === 2 ? "two\nlines" : "one"),
        });
      });

      it("fails the job on a bucket that makes a key longer than S3 takes, naming the record", async () => {
        const cause = await failsNaming(
          [
            { id: 1, day: "ok" },
            { id: 2, day: Array.from({ length: 6 }, () => "d".repeat(200)).join("/") },
          ],
          { bucketAssigner: (r: { day: string }) => r.day },
        );
        expect(cause.cause).toBeInstanceOf(UnsafeBucketPathError);
      });
    });

    describe("keys", () => {
      it.each(["../x", "/abs", "a//b", "a/./b", "a/../b", "a\\b"])(
        "refuses the prefix %j, naming the setting",
        (prefix) => {
          expect(settingOf(() => s3FileSink({ bucket, prefix }))).toBe("prefix");
        },
      );

      it("refuses a part size below S3's 5 MiB minimum, naming the setting", () => {
        expect(settingOf(() => s3FileSink({ bucket, prefix: "p", partSizeBytes: 1024 * 1024 }))).toBe("partSizeBytes");
      });

      it("fails the job on a record whose bucket leaves the prefix, naming the record, and writes nothing", async () => {
        const s3client = await s3();
        const prefix = `escape-${randomBytes(3).toString("hex")}`;
        for (const day of ["../../outside", "/etc"]) {
          const job = new StreamJob({
            name: "escape",
            checkpoint: { storage: join(await temp(), "checkpoints"), intervalMs: 1000 },
            restart: { maxRestarts: 0 },
            logger: silentLogger,
          });
          job
            .fromSource(
              new ArraySource(
                [
                  { id: 1, day: "ok" },
                  { id: 2, day },
                ],
                { name: "rows" },
              ),
            )
            .sinkTo(
              () =>
                s3FileSink({ bucket, prefix, connection: s3Config(), bucketAssigner: (r: { day: string }) => r.day }),
              {
                name: "files",
              },
            );
          const error = await job.execute().catch((e: unknown) => e);
          expect(error).toBeInstanceOf(JobFailedError);
          const cause = (error as JobFailedError).cause as RecordWriteError;
          expect(cause).toBeInstanceOf(RecordWriteError);
          expect(cause.message).toContain("rows[0]@1");
          expect(cause.cause).toBeInstanceOf(UnsafeBucketPathError);
        }
        // Nothing anywhere in the bucket outside the prefix, and nothing committed or open inside it.
        expect((await listKeys(s3client, bucket, "")).filter((k) => !k.startsWith(`${prefix}/`))).toEqual([]);
        expect(await listKeys(s3client, bucket, `${prefix}/`)).toEqual([]);
        expect(await openUploads(s3client, bucket, `${prefix}/`)).toEqual([]);
      });

      it("keeps empty bucket segments from making keys of their own", async () => {
        const s3client = await s3();
        const prefix = `segments-${randomBytes(3).toString("hex")}`;
        const job = new StreamJob({
          name: "segments",
          checkpoint: { storage: join(await temp(), "checkpoints"), intervalMs: 1000 },
          restart: { maxRestarts: 0 },
          logger: silentLogger,
        });
        job
          .fromSource(new ArraySource([{ id: 1, day: "a//b/" }], { name: "rows" }))
          .sinkTo(
            () => s3FileSink({ bucket, prefix, connection: s3Config(), bucketAssigner: (r: { day: string }) => r.day }),
            {
              name: "files",
            },
          );
        await job.execute();
        const keys = await listKeys(s3client, bucket, `${prefix}/`);
        expect(keys).toHaveLength(1);
        expect(keys[0]).toMatch(new RegExp(`^${prefix}/a/b/part-files-0-\\d+-0-[0-9a-f]{12}$`));
      });
    });

    describe("publishing", () => {
      it("writes part files of several upload parts, every record once, and leaves no upload or spool file", async () => {
        const s3client = await s3();
        const prefix = `multipart-${randomBytes(3).toString("hex")}`;
        const spool = await temp();
        const pad = "x".repeat(1000);
        const records = Array.from({ length: 13_000 }, (_, id) => ({ id, pad }));
        const job = new StreamJob({
          name: "multipart",
          checkpoint: { storage: join(await temp(), "checkpoints"), intervalMs: 60_000 },
          restart: { maxRestarts: 0 },
          logger: silentLogger,
        });
        job.fromSource(new ArraySource(records, { name: "rows" })).sinkTo(
          () =>
            s3FileSink({
              bucket,
              prefix,
              connection: s3Config(),
              partSizeBytes: MIN_PART_BYTES,
              spoolDirectory: spool,
            }),
          { name: "files" },
        );
        await job.execute();
        const keys = await listKeys(s3client, bucket, `${prefix}/`);
        expect(keys).toHaveLength(1);
        // A multipart object's ETag ends in -<parts>: 13 MB in 5 MiB parts is three.
        const head = await s3client.send(new HeadObjectCommand({ Bucket: bucket, Key: keys[0] }));
        expect(head.ETag).toMatch(/-3"?$/);
        const counts = await idCountsUnder(s3client, bucket, `${prefix}/`);
        expect(counts.size).toBe(records.length);
        expect([...counts.values()].every((n) => n === 1)).toBe(true);
        expect(await openUploads(s3client, bucket, `${prefix}/`)).toEqual([]);
        // No spooled bytes and no retained copy of a part: every upload was completed.
        const files = (await readdir(spool, { recursive: true, withFileTypes: true })).filter((e) => e.isFile());
        expect(files.map((f) => join(f.parentPath, f.name))).toEqual([]);
      });

      it("settles a repeated commit by the object it published", async () => {
        const s3client = await s3();
        const w = writer(`recommit-${randomBytes(3).toString("hex")}`);
        const open = await w.openPart({ bucket: "", name: "part-r-0-1-0" });
        open.append('{"id":1}\n');
        const closed = await open.closeForCommit();
        await w.commit(closed);
        // The upload is gone now: the server answers the second completion with an error (or not); the object decides.
        await w.commit(closed);
        await w.recoverAndCommit(closed);
        expect(await readObject(s3client, bucket, w.keyOf(closed))).toBe('{"id":1}\n');
        w.close();
      });

      it("settles two completions of one upload at once (a killed process's request still on the server) as published", async () => {
        const s3client = await s3();
        const prefix = `race-${randomBytes(3).toString("hex")}`;
        const first = writer(prefix);
        const second = writer(prefix);
        const closed = await Promise.all(
          Array.from({ length: 8 }, async (_, i) => {
            const open = await first.openPart({ bucket: "", name: `part-c-0-1-${i}` });
            // Three upload parts: a completion that takes the server a while.
            for (let line = 0; line < 3 * LINES_PER_PART; line++) await open.append(`{"id":${i},"pad":"${PAD}"}\n`);
            await open.flush();
            return open.closeForCommit();
          }),
        );
        // As recovery does: the commit retry asks again after a transient answer.
        const retried = (w: S3RecoverableWriter, part: (typeof closed)[number]) =>
          withRetry(
            () => w.recoverAndCommit(part),
            (e) => w.isTransient(e),
            { maxAttempts: 8, initialDelayMs: 50 },
          );
        await Promise.all(closed.flatMap((part) => [retried(first, part), retried(second, part)]));
        for (const [i, part] of closed.entries()) {
          const head = await s3client.send(new HeadObjectCommand({ Bucket: bucket, Key: first.keyOf(part) }));
          expect(head.ContentLength).toBe(part.length);
          expect(Number(/-(\d+)"$/.exec(head.ETag ?? "")?.[1]), `upload parts of part ${i}`).toBeGreaterThanOrEqual(3);
        }
        first.close();
        second.close();
      });

      it("names a part lost when its upload is gone and no object was published", async () => {
        const w = writer(`lost-${randomBytes(3).toString("hex")}`);
        const open = await w.openPart({ bucket: "", name: "part-l-0-1-0" });
        open.append('{"id":1}\n');
        const closed = await open.closeForCommit();
        await w.abort(closed);
        const error = await w.recoverAndCommit(closed).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(PartLostError);
        expect((error as Error).message).toContain("was never published");
        expect((error as Error).message).toContain("this machine has no copy of part 1 to publish it again");
        w.close();
      });

      it("publishes a part whose upload the server lost under a new upload, from its local copies", async () => {
        // What a client that died during its completion can leave on MinIO: no object, the upload gone.
        const s3client = await s3();
        const w = writer(`republished-${randomBytes(3).toString("hex")}`);
        const { closed, expected } = await closedTwoUploadParts(w, "part-p-0-1-0");
        const upload = closed.recoverable as { key: string; uploadId: string };
        await s3client.send(
          new AbortMultipartUploadCommand({ Bucket: bucket, Key: upload.key, UploadId: upload.uploadId }),
        );
        // An upload of the same name an earlier attempt left open: nothing in the state names it.
        await s3client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: upload.key }));
        await w.recoverAndCommit(closed);
        expect(await readObject(s3client, bucket, w.keyOf(closed))).toBe(expected);
        expect(await openUploads(s3client, bucket, upload.key)).toEqual([]);
        expect(await w.retained.list()).toEqual([]);
        // A recommit after that finds the object published and leaves it be.
        await w.recoverAndCommit(closed);
        expect(await readObject(s3client, bucket, w.keyOf(closed))).toBe(expected);
        w.close();
      });

      it("publishes every part whose completion a dying client cut off, whatever the server was left with", async () => {
        // A real cut: the completion's connection closes 0-8 ms after it is sent, twice, as a
        // process killed during its commit and again during recovery does. MinIO is left with
        // the object published, or the upload open with its parts gone, or gone, or (rarely)
        // the upload's data moved under the key so that the upload can never complete.
        const w = writer(`cut-${randomBytes(3).toString("hex")}`);
        const s3client = await s3();
        const closed = await Promise.all(
          Array.from({ length: 24 }, async (_, i) => {
            const open = await w.openPart({ bucket: "", name: `part-c-0-${i}-0` });
            open.append(`{"id":${i}}\n`);
            return open.closeForCommit();
          }),
        );
        for (const part of closed) {
          const upload = part.recoverable as { key: string; uploadId: string; parts: { n: number; etag: string }[] };
          for (let cut = 0; cut < 2; cut++) {
            const dying = s3Client(s3Config());
            const signal = AbortSignal.timeout(Math.floor(Math.random() * 9));
            await dying
              .send(
                new CompleteMultipartUploadCommand({
                  Bucket: bucket,
                  Key: upload.key,
                  UploadId: upload.uploadId,
                  MultipartUpload: { Parts: upload.parts.map((p) => ({ PartNumber: p.n, ETag: p.etag })) },
                }),
                { abortSignal: signal },
              )
              .catch(() => undefined);
            dying.destroy();
          }
        }
        await Promise.all(closed.map((part) => w.recoverAndCommit(part)));
        for (const [i, part] of closed.entries()) {
          expect(await readObject(s3client, bucket, w.keyOf(part))).toBe(`{"id":${i}}\n`);
        }
        expect(await w.retained.list()).toEqual([]);
        w.close();
      });

      it("names a part lost when its upload is open but lacks a part the checkpoint lists", async () => {
        // What a client that died during its completion can leave on MinIO: the upload open, its parts gone.
        const w = writer(`lacking-${randomBytes(3).toString("hex")}`);
        const open = await w.openPart({ bucket: "", name: "part-m-0-1-0" });
        open.append('{"id":1}\n');
        const closed = await open.closeForCommit();
        const upload = closed.recoverable as { parts: { n: number; etag: string }[] };
        const tampered = { ...closed, recoverable: { ...upload, parts: [...upload.parts, { n: 2, etag: '"0"' }] } };
        const error = await w.recoverAndCommit(tampered).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(PartLostError);
        expect((error as Error).message).toMatch(/lacks parts the checkpoint lists .*the server holds 1:/);
        expect((error as Error).message).toContain("this machine has no copy of part 2 to publish it again");
        await w.abort(closed);
        w.close();
      });

      it("publishes a part whose open upload lacks a part under a new upload, from its local copies checked by ETag", async () => {
        const s3client = await s3();
        const w = writer(`regained-${randomBytes(3).toString("hex")}`);
        const { closed, expected } = await closedTwoUploadParts(w, "part-r-0-1-0");
        const upload = closed.recoverable as { key: string; uploadId: string; parts: { n: number }[] };
        expect(upload.parts.map((p) => p.n)).toEqual([1, 2]);
        // The server no longer holds part 2 as the checkpoint lists it (another part 2 replaced it).
        await s3client.send(
          new UploadPartCommand({
            Bucket: bucket,
            Key: upload.key,
            UploadId: upload.uploadId,
            PartNumber: 2,
            Body: "x",
          }),
        );
        await w.recoverAndCommit(closed);
        expect(await readObject(s3client, bucket, w.keyOf(closed))).toBe(expected);
        // Published under a new upload (MinIO cannot complete one whose data it has moved
        // under the key already): the old one is aborted, and the local copies are gone.
        expect(await openUploads(s3client, bucket, upload.key)).toEqual([]);
        expect(await w.retained.list()).toEqual([]);
        w.close();
      });

      it("never replaces another object under the part's name", async () => {
        const s3client = await s3();
        const w = writer(`foreign-${randomBytes(3).toString("hex")}`);
        const open = await w.openPart({ bucket: "", name: "part-f-0-1-0" });
        open.append('{"id":1}\n');
        const closed = await open.closeForCommit();
        await s3client.send(new PutObjectCommand({ Bucket: bucket, Key: w.keyOf(closed), Body: "someone else's\n" }));
        const error = await w.commit(closed).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(PartLostError);
        expect((error as Error).message).toContain("holds another object");
        expect(await readObject(s3client, bucket, w.keyOf(closed))).toBe("someone else's\n");
        await w.abort(closed);
        w.close();
      });

      it("refuses to open an at-least-once part over an existing object", async () => {
        const s3client = await s3();
        const w = writer(`visible-${randomBytes(3).toString("hex")}`);
        await s3client.send(
          new PutObjectCommand({ Bucket: bucket, Key: w.keyOf({ bucket: "", name: "p-0-1-0" }), Body: "x" }),
        );
        await expect(w.openPart({ bucket: "", name: "p-0-1-0", visible: true })).rejects.toBeInstanceOf(
          PartExistsError,
        );
        w.close();
      });
    });

    describe("lingering uploads", () => {
      it("aborts the uploads of owned subtasks that no state references, page after page", async () => {
        const s3client = await s3();
        const prefix = `lingering-${randomBytes(3).toString("hex")}`;
        const create = (name: string) =>
          s3client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: `${prefix}/day/${name}` }));
        // More than one page of ListMultipartUploads (1,000) for subtask 0.
        const ours = Array.from({ length: 1005 }, (_, i) => `part-s-0-7-${i}`);
        for (let i = 0; i < ours.length; i += 50) await Promise.all(ours.slice(i, i + 50).map(create));
        await create("part-s-1-7-0"); // another subtask's
        await create("part-other-0-7-0"); // another sink's
        const w = writer(prefix);
        const aborted = await w.abortLingering(
          "part-s",
          (name) => {
            const match = /^part-s-(\d+)-\d+-\d+$/.exec(name);
            return match ? Number(match[1]) : undefined;
          },
          {
            ownsSubtaskIndex: (i) => i === 0,
            isReferenced: (part) => part.name === "part-s-0-7-3" && part.bucket === "day",
          },
        );
        expect(aborted).toHaveLength(1004);
        const left = (await openUploads(s3client, bucket, `${prefix}/`))
          .map((u) => u.key.slice(prefix.length + 1))
          .sort();
        expect(left).toEqual(["day/part-other-0-7-0", "day/part-s-0-7-3", "day/part-s-1-7-0"]);
        w.close();
      });
    });

    describe("crashes", () => {
      it("recovers exactly once after a SIGKILL while a part is uploading", async () => {
        const s3client = await s3();
        const prefix = `kill-upload-${randomBytes(3).toString("hex")}`;
        const config: S3JobConfig = {
          s3: s3Config(),
          bucket,
          prefix,
          records: 60_000,
          pad: 500,
          checkpoints: join(await temp(), "checkpoints"),
          intervalMs: 1500,
          ratePerSecond: 12_000,
        };
        const first = startJob(config);
        // Kill once an upload of ours holds a part but is still open: a part file mid-upload.
        let killedMidUpload = false;
        const deadline = Date.now() + 60_000;
        while (!killedMidUpload && Date.now() < deadline) {
          for (const upload of await openUploads(s3client, bucket, `${prefix}/`)) {
            const parts = await s3client.send(
              new ListPartsCommand({ Bucket: bucket, Key: upload.key, UploadId: upload.uploadId }),
            );
            if ((parts.Parts ?? []).length > 0) {
              first.child.kill("SIGKILL");
              killedMidUpload = true;
              break;
            }
          }
          await new Promise((r) => setTimeout(r, 20));
        }
        const crashed = await first.exited;
        expect(killedMidUpload).toBe(true);
        expect(crashed.signal).toBe("SIGKILL");
        const second = await startJob(config).exited;
        expect(second.stderr).toBe("");
        expect(second.code).toBe(0);
        const counts = await idCountsUnder(s3client, bucket, `${prefix}/`);
        expect(counts.size).toBe(config.records);
        expect([...counts.values()].filter((n) => n !== 1)).toEqual([]);
        expect(await openUploads(s3client, bucket, `${prefix}/`)).toEqual([]);
      });

      it("fails loudly with TransactionLostError when a pre-committed upload vanished before recovery", async () => {
        const s3client = await s3();
        const prefix = `vanished-${randomBytes(3).toString("hex")}`;
        const config: S3JobConfig = {
          s3: s3Config(),
          bucket,
          prefix,
          records: 5_000,
          pad: 10,
          checkpoints: join(await temp(), "checkpoints"),
          intervalMs: 200,
          ratePerSecond: 5_000,
        };
        // Killed once checkpoint 1 is durable, before any part of it was published.
        const crashed = await startJob(config, "after-checkpoint-durable@1").exited;
        expect(crashed.signal).toBe("SIGKILL");
        const uploads = await openUploads(s3client, bucket, `${prefix}/`);
        expect(uploads.length).toBeGreaterThan(0);
        // What an AbortIncompleteMultipartUpload rule shorter than the outage does.
        const w = writer(prefix);
        for (const u of uploads) await w.abortUpload({ bucket, key: u.key, uploadId: u.uploadId });
        w.close();
        const rerun = await startJob(config).exited;
        expect(rerun.code).toBe(1);
        expect(rerun.stderr).toContain("error-code: TRANSACTION_LOST");
      });

      it("at least once: publishes every part at its barrier and leaves no upload after a crash", async () => {
        const s3client = await s3();
        const prefix = `alo-${randomBytes(3).toString("hex")}`;
        const config: S3JobConfig = {
          s3: s3Config(),
          bucket,
          prefix,
          records: 20_000,
          pad: 10,
          checkpoints: join(await temp(), "checkpoints"),
          intervalMs: 200,
          ratePerSecond: 10_000,
          guarantee: "AT_LEAST_ONCE",
        };
        const crashed = await startJob(config, "mid-write@40").exited;
        expect(crashed.signal).toBe("SIGKILL");
        const rerun = await startJob(config).exited;
        expect(rerun.stderr).toBe("");
        expect(rerun.code).toBe(0);
        const counts = await idCountsUnder(s3client, bucket, `${prefix}/`);
        expect(counts.size).toBe(config.records);
        expect(await openUploads(s3client, bucket, `${prefix}/`)).toEqual([]);
      });
    });
  });
}
