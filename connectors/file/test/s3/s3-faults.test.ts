// The S3 server going away in the middle of a job, for real: a restart (SIGTERM, start again
// on the same data) and a crash (SIGKILL, start again). The job rides through (requests fail;
// the SDK retries, or the job restarts from its last checkpoint) and the result is exact:
// every record once, no multipart upload left, with checkpoints on local disk and on S3 itself.
// Runs in the "services-restart" project, before the other tests and beside only tests that
// restart other servers: the fault ends every connection to the server.

import { randomBytes } from "node:crypto";
import { crashS3, restartS3, s3Config } from "@exactly/testkit/endpoints";
import { runThroughFault } from "@exactly/testkit/fault-run";
import { describe, expect, it } from "vitest";
import { MIN_PART_BYTES, S3CheckpointStorage, s3FileSink } from "../../src/s3/index.ts";
import { idCountsUnder, listKeys, openUploads, testBucket } from "./helpers.ts";

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
    before: async () => (await listKeys(s3client, bucket, `${prefix}/`)).length,
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
    expect(run.before).toBeGreaterThan(0);
    const s3client = await s3();
    const counts = await idCountsUnder(s3client, bucket, `${prefix}/`);
    expect(counts.size).toBe(RECORDS);
    expect([...counts.values()].filter((n) => n !== 1)).toEqual([]);
    expect(await openUploads(s3client, bucket, `${prefix}/`)).toEqual([]);
  });
});
