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
import { join } from "node:path";
import { type CheckpointStorage, ConfigurationError, type DeliveryGuarantee, type SinkFactory } from "@exactly/core";
import type * as S3Connector from "@exactly/file/s3";
import { loadS3Connector, S3_ENDPOINT_HELP, s3ConnectionFromEnv } from "../../s3-connection.ts";
import { addressOf, serverAt } from "../../server-check.ts";
import { CHECKPOINT_DIR } from "../demo-job-config.ts";
import { type DemoRecord, demoRecordLine } from "../demo-record.ts";
import { type OutputCheck, RecordTally } from "../verify-output.ts";
import type { DemoTarget } from "./demo-target.ts";

const USER = "--sink s3";

export interface S3DemoSettings {
  readonly connection: S3Connector.S3ConnectionOptions;
  readonly bucket: string;
  /** Every object the demo writes is under `<prefix>/`. */
  readonly prefix: string;
  /** `s3://bucket/prefix` for the job's checkpoints, or undefined for the output directory. */
  readonly checkpoints?: string;
}

/** `--sink s3`: the server, the bucket and prefix of the part files, and where the checkpoints go. */
export const s3Target: DemoTarget<S3DemoSettings> = {
  sink: "s3",
  flags: [
    { flags: "--s3-endpoint <url>", description: S3_ENDPOINT_HELP },
    { flags: "--bucket <name>", description: "the bucket the demo writes to; created if missing" },
    {
      flags: "--prefix <prefix>",
      description: "the key prefix it writes under; must be empty (default: a new one per run)",
    },
    { flags: "--checkpoints <s3url>", description: "keep the checkpoints at s3://bucket/prefix instead of --out" },
  ],
  settings(options, previous) {
    if (!options.bucket) {
      throw new ConfigurationError("--bucket", "give the S3 bucket the demo writes to (created if missing)");
    }
    // A resumed run writes on under the prefix of the run it resumes; a new run gets a new one.
    const prefix =
      options.prefix ??
      previous?.prefix ??
      `exactly-demo/${new Date().toISOString().replace(/[:.]/g, "-")}-${randomBytes(3).toString("hex")}`;
    if (options.checkpoints !== undefined && !options.checkpoints.startsWith("s3://")) {
      throw new ConfigurationError(
        "--checkpoints",
        `must be s3://bucket/prefix, got ${JSON.stringify(options.checkpoints)}`,
      );
    }
    return {
      connection: s3ConnectionFromEnv(options.s3Endpoint),
      bucket: options.bucket,
      prefix,
      ...(options.checkpoints === undefined ? {} : { checkpoints: options.checkpoints }),
    };
  },
  identity: (target) => ({
    bucket: target.bucket,
    prefix: target.prefix,
    ...(target.checkpoints ? { checkpoints: target.checkpoints } : {}),
  }),
  server: (target) =>
    target.connection.endpoint
      ? serverAt("--s3-endpoint (or $EXACTLY_S3_ENDPOINT)", "the S3 server", addressOf(target.connection.endpoint, 443))
      : undefined,
  prepare: prepareS3Prefix,
  sinks: (target, run) => s3DemoSinks(target, run.guarantee),
  checkpoints: s3DemoCheckpoints,
  async verify(target, run) {
    const { uploadsLeft, ...check } = await verifyDemoS3(target, run.records);
    return {
      check,
      leftOpen: uploadsLeft,
      fields: {
        bucket: target.bucket,
        prefix: target.prefix,
        checkpointLocation: target.checkpoints ?? join(run.out, CHECKPOINT_DIR),
        uploadsLeft,
      },
    };
  },
  rows: (s) => [
    ["output", `s3://${s.bucket}/${s.prefix}/ (${s.files} part files)`],
    ["uploads left", String(s.uploadsLeft)],
    ["checkpoints in", s.checkpointLocation ?? s.out],
  ],
};

/**
 * Creates the bucket if missing and refuses a prefix that holds anything: the demo counts
 * every record under it, so an earlier run's objects would show as duplicates.
 */
async function prepareS3Prefix(target: S3DemoSettings): Promise<void> {
  const s3 = await loadS3Connector(USER);
  const prefix = new s3.S3Prefix({ bucket: target.bucket, prefix: target.prefix, connection: target.connection });
  try {
    await prefix.ensureBucket();
    for await (const _ of prefix.objects()) {
      throw new ConfigurationError(
        "--prefix",
        `s3://${target.bucket}/${target.prefix} holds objects: give the demo a new prefix`,
      );
    }
    if (target.checkpoints) {
      const { bucket, prefix: checkpointPrefix } = s3.parseS3Url(target.checkpoints, "--checkpoints");
      const checkpoints = new s3.S3Prefix({ bucket, prefix: checkpointPrefix, connection: target.connection });
      try {
        await checkpoints.ensureBucket();
        for await (const _ of checkpoints.objects()) {
          throw new ConfigurationError(
            "--checkpoints",
            `${target.checkpoints} holds objects: give the demo a new location`,
          );
        }
      } finally {
        checkpoints.close();
      }
    }
  } finally {
    prefix.close();
  }
}

async function s3DemoSinks(
  target: S3DemoSettings,
  guarantee: DeliveryGuarantee,
): Promise<Record<string, SinkFactory<DemoRecord>>> {
  const s3 = await loadS3Connector(USER);
  return {
    "demo-s3": () =>
      s3.s3FileSink<DemoRecord>({
        bucket: target.bucket,
        prefix: target.prefix,
        connection: target.connection,
        partSuffix: ".jsonl",
        guarantee,
        encoder: demoRecordLine,
      }),
  };
}

async function s3DemoCheckpoints(target: S3DemoSettings): Promise<CheckpointStorage | undefined> {
  if (!target.checkpoints) return undefined;
  const s3 = await loadS3Connector(USER);
  return new s3.S3CheckpointStorage({ location: target.checkpoints, connection: target.connection });
}

interface S3DemoCheck extends OutputCheck {
  /** Multipart uploads still open under the demo's prefix. */
  readonly uploadsLeft: number;
}

/** Reads every object under the prefix, as a reader of the bucket would, and counts open uploads. */
async function verifyDemoS3(target: S3DemoSettings, records: number): Promise<S3DemoCheck> {
  const s3 = await loadS3Connector(USER);
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
