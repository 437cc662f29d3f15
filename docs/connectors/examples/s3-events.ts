// Events into part files on S3, exactly once by multipart uploads completed at checkpoints,
// with the job's checkpoints on S3 too: `node s3-events.ts [count]` with EVENTS_BUCKET set
// (and S3_ENDPOINT for an S3-compatible server; credentials from the AWS SDK's usual chain).
// A test installs @exactly/core, @exactly/file and @aws-sdk/client-s3 alone, runs this file
// against a real S3 server and reads every object back.
import { DeliveryGuarantee, GeneratorSource, StreamJob } from "@exactly/core";
import { S3CheckpointStorage, s3FileSink } from "@exactly/file/s3";

interface Event {
  id: number;
  day: string;
}

const count = Number(process.argv[2] ?? 10_000);
const bucket = process.env.EVENTS_BUCKET ?? "my-bucket";
// An S3-compatible server (MinIO, Ceph, …) addresses buckets by path; AWS needs no endpoint.
const connection = process.env.S3_ENDPOINT ? { endpoint: process.env.S3_ENDPOINT, forcePathStyle: true } : {};

// #region sink
const job = new StreamJob({
  name: "events-to-s3",
  checkpoint: {
    storage: new S3CheckpointStorage({ location: `s3://${bucket}/jobs/events-to-s3/checkpoints`, connection }),
    intervalMs: 1_000,
  },
});
job
  .fromSource(
    new GeneratorSource<Event>({ name: "events", count, generate: (id) => ({ id, day: `2026-12-0${1 + (id % 3)}` }) }),
  )
  .sinkTo(
    () =>
      s3FileSink<Event>({
        bucket,
        prefix: "events", // every key starts with "events/"
        connection,
        bucketAssigner: (e) => e.day, // "events/2026-12-02/part-…"
        partSuffix: ".jsonl",
        guarantee: DeliveryGuarantee.EXACTLY_ONCE, // the default
        transactionTimeoutMs: 7 * 24 * 3600_000, // the bucket's AbortIncompleteMultipartUpload age
      }),
    { name: "events" },
  );
// #endregion sink

const result = await job.execute();
console.log(JSON.stringify({ checkpointsCompleted: result.checkpointsCompleted }));
