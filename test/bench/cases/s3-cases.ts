/**
 * The S3 file sink's benchmark cases, one per child process:
 *   node test/bench/cases/s3-cases.ts <case> <records> <dir>
 * Every case writes the same JSON lines of about 1 KiB (benchRecord with a padded payload)
 * under a prefix of its own in one bucket (EXACTLY_S3_ENDPOINT and keys), then deletes it:
 * the sink through a job at EXACTLY_ONCE (checkpoints on disk, and on S3) and AT_LEAST_ONCE,
 * and the raw SDK uploading the same bytes as one multipart upload with the sink's part size
 * and concurrency, without the runtime.
 */
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import {
  type CheckpointStorage,
  DeliveryGuarantee,
  FileSystemCheckpointStorage,
  GeneratorSource,
  StreamJob,
  silentLogger,
} from "@exactly/core";
import { S3CheckpointStorage, S3Prefix, s3FileSink } from "@exactly/file/s3";
import { benchRecord, executeAndReport, pace, report, runId } from "../bench-protocol.ts";

const [name, recordsArg, dir] = process.argv.slice(2) as [string, string, string];
const records = Number(recordsArg);
const connection = {
  endpoint: process.env.EXACTLY_S3_ENDPOINT as string,
  region: process.env.EXACTLY_S3_REGION ?? "us-east-1",
  forcePathStyle: true,
  credentials: {
    accessKeyId: process.env.EXACTLY_S3_ACCESS_KEY as string,
    secretAccessKey: process.env.EXACTLY_S3_SECRET_KEY as string,
  },
};
const bucket = "exactly-bench";
const prefix = `bench/${name.replace(/[^a-z0-9]+/g, "-")}-${runId(dir)}`;
/** The sink's defaults, which the raw case uses too. */
const PART_BYTES = 8 * 1024 * 1024;
const CONCURRENCY = 4;
const PAD = "x".repeat(1000);

const line = (id: number) => {
  const r = benchRecord(id);
  return `{"id":${r.id},"key":${r.key},"payload":"${r.payload}","pad":"${PAD}"}`;
};

async function cleanUp(): Promise<void> {
  const target = new S3Prefix({ bucket, prefix, connection });
  const { DeleteObjectsCommand } = await import("@aws-sdk/client-s3");
  try {
    let keys: string[] = [];
    const flush = async () => {
      if (keys.length === 0) return;
      await target.client.send(
        new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } }),
      );
      keys = [];
    };
    for await (const { key } of target.objects()) {
      keys.push(key);
      if (keys.length === 1000) await flush();
    }
    await flush();
    for await (const upload of target.openUploads()) await target.abortUpload(upload);
  } finally {
    target.close();
  }
}

async function framework(guarantee: DeliveryGuarantee, checkpoints: "disk" | "s3"): Promise<void> {
  const storage: CheckpointStorage =
    checkpoints === "s3"
      ? new S3CheckpointStorage({ location: `s3://${bucket}/${prefix}-checkpoints`, connection })
      : new FileSystemCheckpointStorage(join(dir, "checkpoints"));
  const job = new StreamJob({
    name: `bench-${name}`,
    checkpoint: { storage, intervalMs: 1000 },
    logger: silentLogger,
  });
  job.fromSource(new GeneratorSource({ count: records, ...pace, generate: (id) => id })).sinkTo(
    () =>
      s3FileSink<number>({
        bucket,
        prefix,
        connection,
        partSizeBytes: PART_BYTES,
        uploadConcurrency: CONCURRENCY,
        spoolDirectory: join(dir, "spool"),
        guarantee,
        encoder: line,
      }),
    { name: "s3-out" },
  );
  await executeAndReport(job, records);
  await cleanUp();
}

/** The same bytes as one multipart upload: parts of PART_BYTES, CONCURRENCY in flight, from memory. */
async function raw(): Promise<void> {
  const client = new S3Client({ ...connection, maxAttempts: 3 });
  const key = `${prefix}/raw.jsonl`;
  const started = performance.now();
  const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
  const parts: { PartNumber: number; ETag: string }[] = [];
  const inFlight = new Set<Promise<void>>();
  let chunks: string[] = [];
  let size = 0;
  let partNumber = 0;
  const ship = async () => {
    const body = Buffer.from(chunks.join(""));
    chunks = [];
    size = 0;
    const n = ++partNumber;
    while (inFlight.size >= CONCURRENCY) await Promise.race(inFlight);
    const sending: Promise<void> = client
      .send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: n, Body: body }))
      .then(({ ETag }) => {
        parts.push({ PartNumber: n, ETag: ETag as string });
      })
      .finally(() => inFlight.delete(sending));
    inFlight.add(sending);
  };
  for (let id = 0; id < records; id++) {
    const text = `${line(id)}\n`;
    chunks.push(text);
    size += text.length;
    if (size >= PART_BYTES) await ship();
  }
  if (size > 0) await ship();
  await Promise.all(inFlight);
  parts.sort((a, b) => a.PartNumber - b.PartNumber);
  await client.send(
    new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: parts } }),
  );
  report({ records, seconds: (performance.now() - started) / 1000, checkpointMs: [] });
  client.destroy();
  await cleanUp();
}

const cases: Record<string, () => Promise<void>> = {
  "s3 sink, exactly-once": () => framework(DeliveryGuarantee.EXACTLY_ONCE, "disk"),
  "s3 sink, exactly-once, checkpoints on S3": () => framework(DeliveryGuarantee.EXACTLY_ONCE, "s3"),
  "s3 sink, at-least-once": () => framework(DeliveryGuarantee.AT_LEAST_ONCE, "disk"),
  "raw SDK multipart upload": raw,
};
const run = cases[name];
if (!run) throw new Error(`unknown case ${name}; cases: ${Object.keys(cases).join(", ")}`);
const setup = new S3Prefix({ bucket, connection });
await setup.ensureBucket();
setup.close();
await run();
