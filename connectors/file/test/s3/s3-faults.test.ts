// The S3 server going away in the middle of a job, for real: a restart (SIGTERM, start again
// on the same data) and a crash (SIGKILL, start again). The job rides through (requests fail;
// the SDK retries, or the job restarts from its last checkpoint) and the result is exact:
// every record once, no multipart upload left, with checkpoints on local disk and on S3 itself.
// Runs in the "services-restart" project, before the other tests and beside only tests that
// restart other servers: the fault ends every connection to the server.

import { randomBytes } from "node:crypto";
import { AbortMultipartUploadCommand } from "@aws-sdk/client-s3";
import { crashS3, restartS3, s3Config } from "@exactly/testkit/endpoints";
import { runThroughFault } from "@exactly/testkit/fault-run";
import { describe, expect, it } from "vitest";
import { MIN_PART_BYTES, S3CheckpointStorage, S3RecoverableWriter, s3FileSink } from "../../src/s3/index.ts";
import { idCountsUnder, listedUploads, listKeys, openUploads, readObject, stillOpen, testBucket } from "./helpers.ts";

const { bucket, s3 } = testBucket("faults", s3Config);

const RECORDS = 40_000;

async function runThrough(prefix: string, checkpointsOnS3: boolean, fault: () => Promise<void>) {
  const s3client = await s3();
  const pad = "z".repeat(300);
  return runThroughFault({
    name: "s3-fault",
    sink: () =>
      s3FileSink({
        bucket,
        prefix,
        connection: { ...s3Config(), maxAttempts: 2 },
        partSizeBytes: MIN_PART_BYTES,
        bucketAssigner: (r: { id: number }) => `b${r.id % 2}`,
      }),
    records: RECORDS,
    generate: (id) => ({ id, pad }),
    ratePerSecond: 8_000,
    checkpointIntervalMs: 300,
    ...(checkpointsOnS3
      ? {
          checkpointStorage: new S3CheckpointStorage({
            location: `s3://${bucket}/${prefix}-checkpoints`,
            connection: s3Config(),
          }),
        }
      : {}),
    // The default classification: the outage is ridden through however long it lasts.
    restart: { initialDelayMs: 200, maxDelayMs: 1000 },
    faultAfterMs: 2000,
    // The uploads open as the fault comes, to be confirmed gone one by one at the end: after a
    // restart MinIO's listing of the bucket names none of them (see the last test).
    before: async () => ({
      keys: (await listKeys(s3client, bucket, `${prefix}/`)).length,
      uploads: await listedUploads(s3client, bucket, `${prefix}/`),
    }),
    fault,
  });
}

describe("S3 server faults", () => {
  it.each([
    ["restarted", false, restartS3],
    ["SIGKILLed, down 5 s", false, () => crashS3({ downMs: 5000 })],
    ["restarted, checkpoints on S3", true, restartS3],
    ["SIGKILLed, down 5 s, checkpoints on S3", true, () => crashS3({ downMs: 5000 })],
  ] as const)("exactly once when the server is %s mid-run", async (_what, checkpointsOnS3, fault) => {
    const prefix = `fault-${randomBytes(4).toString("hex")}`;
    const run = await runThrough(prefix, checkpointsOnS3, fault);
    // The fault came mid-run: after the first commits, before the end.
    expect(run.endedBeforeFault).toBe(false);
    expect(run.before?.keys).toBeGreaterThan(0);
    expect(run.before?.uploads.length).toBeGreaterThan(0);
    const s3client = await s3();
    const counts = await idCountsUnder(s3client, bucket, `${prefix}/`);
    expect(counts.size).toBe(RECORDS);
    expect([...counts.values()].filter((n) => n !== 1)).toEqual([]);
    expect(await openUploads(s3client, bucket, `${prefix}/`)).toEqual([]);
    expect(await stillOpen(s3client, bucket, run.before?.uploads ?? [])).toEqual([]);
  });

  it("keeps a part's local copies and aborts what lingers across a restart of the server, whose bucket-wide listing forgets every upload", async () => {
    // MinIO answers ListMultipartUploads of a whole bucket from memory, so after a restart it
    // names none of the uploads made before. A sweep that took that listing's word dropped
    // the copies a lost part is published again from, and a lingering upload stayed open:
    // an upload the listing leaves out is asked about alone, and those this machine opened
    // are found in its own record.
    const s3client = await s3();
    const prefix = `copies-${randomBytes(4).toString("hex")}`;
    const w = new S3RecoverableWriter({ bucket, prefix, connection: s3Config(), partSizeBytes: MIN_PART_BYTES });
    const parseSubtask = (name: string) => (/^part-k-(\d+)-\d+$/.exec(name) ? 0 : undefined);
    const closedPart = async (name: string) => {
      const open = await w.openPart({ bucket: "", name });
      await open.append(`{"name":"${name}"}\n`);
      return open.closeForCommit();
    };
    const kept = await closedPart("part-k-0-1");
    const dropped = await closedPart("part-k-0-2");
    const lingering = await closedPart("part-k-0-3");
    const uploadOf = (part: typeof kept) => part.recoverable as { key: string; uploadId: string };
    // The local copy of a part's single part (the file named `<upload>-1`).
    const copiesOf = async (part: typeof kept) => {
      const copy = w.retained.pathOf(uploadOf(part).uploadId, 1).split("/").pop();
      return (await w.retained.list()).filter((name) => name === copy);
    };
    expect(await copiesOf(kept)).toHaveLength(1);

    await restartS3();
    const listed = (await listedUploads(s3client, bucket, `${prefix}/`)).map((u) => u.uploadId);
    expect(listed, "the server's listing after its restart (what this test is about)").toEqual([]);
    // Aborted behind the writer's back: gone, so its copies may go; the other is open.
    const gone = uploadOf(dropped);
    await s3client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: gone.key, UploadId: gone.uploadId }));
    // The checkpoint names all but the third: that one lingers, and this machine recorded it.
    const aborted = await w.abortLingering("part-k", parseSubtask, {
      ownsSubtaskIndex: () => true,
      isReferenced: (part) => part.name !== "part-k-0-3",
    });
    expect(aborted).toEqual([uploadOf(lingering).key]);
    expect(await stillOpen(s3client, bucket, [uploadOf(lingering)])).toEqual([]);
    expect(await copiesOf(lingering)).toEqual([]);
    expect(await copiesOf(kept)).toHaveLength(1);
    expect(await copiesOf(dropped)).toEqual([]);

    await w.commit(kept);
    expect(await readObject(s3client, bucket, w.keyOf(kept))).toBe('{"name":"part-k-0-1"}\n');
    expect(await w.retained.list()).toEqual([]);
    w.close();
  });
});
