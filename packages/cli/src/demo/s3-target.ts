/**
 * `exactly demo --sink s3`: the demo job writes JSON-line part files through the S3 file
 * sink under a prefix of its own (a fresh one per run unless given), and optionally keeps
 * its checkpoints on S3 too (`--checkpoints s3://bucket/prefix`). At the end the demo reads
 * every object under the prefix back and counts lost and duplicated records, and counts the
 * multipart uploads of the run still open (there must be none).
 *
 * `@exactly/file/s3` needs the optional peer `@aws-sdk/client-s3`; it is loaded only here.
 */
import { randomBytes } from "node:crypto";
import type { CheckpointStorage, DeliveryGuarantee, SinkFactory } from "@exactly/core";
import type * as S3Connector from "@exactly/file/s3";
import { loadS3Connector, s3ConnectionFromEnv } from "../s3-connection.ts";
import type { DemoRecord } from "./demo-job.ts";
import { type OutputCheck, RecordTally } from "./verify-output.ts";

export interface S3DemoTarget {
  readonly connection: S3Connector.S3ConnectionOptions;
  readonly bucket: string;
  /** Every object the demo writes is under `<prefix>/`. */
  readonly prefix: string;
  /** `s3://bucket/prefix` for the job's checkpoints, or undefined for the output directory. */
  readonly checkpoints?: string;
}

/** The target from the flags; the connection as {@link s3ConnectionFromEnv} makes it. */
export function s3DemoTarget(options: {
  s3Endpoint?: string;
  bucket?: string;
  prefix?: string;
  checkpoints?: string;
}): S3DemoTarget {
  if (!options.bucket) throw new Error("--bucket: give the S3 bucket the demo writes to (created if missing)");
  const prefix =
    options.prefix ??
    `exactly-demo/${new Date().toISOString().replace(/[:.]/g, "-")}-${randomBytes(3).toString("hex")}`;
  if (options.checkpoints !== undefined && !options.checkpoints.startsWith("s3://")) {
    throw new Error(`--checkpoints must be s3://bucket/prefix, got ${JSON.stringify(options.checkpoints)}`);
  }
  return {
    connection: s3ConnectionFromEnv(options.s3Endpoint),
    bucket: options.bucket,
    prefix,
    ...(options.checkpoints === undefined ? {} : { checkpoints: options.checkpoints }),
  };
}

/**
 * Creates the bucket if missing and refuses a prefix that holds anything: the demo counts
 * every record under it, so an earlier run's objects would show as duplicates.
 */
export async function prepareS3Prefix(target: S3DemoTarget): Promise<void> {
  const s3 = await loadS3Connector("--sink s3");
  const prefix = new s3.S3Prefix({ bucket: target.bucket, prefix: target.prefix, connection: target.connection });
  try {
    await prefix.ensureBucket();
    for await (const _ of prefix.objects()) {
      throw new Error(`--prefix s3://${target.bucket}/${target.prefix} holds objects: give the demo a new prefix`);
    }
    if (target.checkpoints) {
      const { bucket, prefix: checkpointPrefix } = s3.parseS3Url(target.checkpoints, "--checkpoints");
      const checkpoints = new s3.S3Prefix({ bucket, prefix: checkpointPrefix, connection: target.connection });
      try {
        await checkpoints.ensureBucket();
        for await (const _ of checkpoints.objects()) {
          throw new Error(`--checkpoints ${target.checkpoints} holds objects: give the demo a new location`);
        }
      } finally {
        checkpoints.close();
      }
    }
  } finally {
    prefix.close();
  }
}

export async function s3DemoSinks(
  target: S3DemoTarget,
  guarantee: DeliveryGuarantee,
): Promise<Record<string, SinkFactory<DemoRecord>>> {
  const s3 = await loadS3Connector("--sink s3");
  return {
    "demo-s3": () =>
      s3.s3FileSink<DemoRecord>({
        bucket: target.bucket,
        prefix: target.prefix,
        connection: target.connection,
        partSuffix: ".jsonl",
        guarantee,
        encoder: (r) => `{"id":${r.id},"key":${r.key},"seq":${r.seq}}`,
      }),
  };
}

export async function s3DemoCheckpoints(target: S3DemoTarget): Promise<CheckpointStorage | undefined> {
  if (!target.checkpoints) return undefined;
  const s3 = await loadS3Connector("--sink s3");
  return new s3.S3CheckpointStorage({ location: target.checkpoints, connection: target.connection });
}

export interface S3DemoCheck extends OutputCheck {
  /** Multipart uploads still open under the demo's prefix. */
  readonly uploadsLeft: number;
}

/** Reads every object under the prefix, as a reader of the bucket would, and counts open uploads. */
export async function verifyDemoS3(target: S3DemoTarget, records: number): Promise<S3DemoCheck> {
  const s3 = await loadS3Connector("--sink s3");
  const prefix = new s3.S3Prefix({ bucket: target.bucket, prefix: target.prefix, connection: target.connection });
  try {
    const tally = new RecordTally(records);
    let files = 0;
    for await (const { key } of prefix.objects()) {
      files++;
      for (const line of (await prefix.readText(key)).split("\n")) {
        if (line.length === 0) continue;
        try {
          tally.add(JSON.parse(line));
        } catch {
          tally.add(undefined);
        }
      }
    }
    let uploadsLeft = 0;
    for await (const _ of prefix.openUploads()) uploadsLeft++;
    return { ...tally.result(files), uploadsLeft };
  } finally {
    prefix.close();
  }
}
