/**
 * The S3 file sink's conformance definitions. The suite's child process loads this module
 * for `createSink` (and `createCheckpointStorage`); the test process uses the definitions.
 * Each scenario writes under a prefix of its own in one bucket.
 */
import type { ConformanceDefinition, ConformanceRecord, ScenarioScope, SinkFactoryContext } from "@exactly/conformance";
import { DeliveryGuarantee } from "@exactly/core";
import { MIN_PART_BYTES, S3CheckpointStorage, s3FileSink } from "../../../src/s3/index.ts";
import {
  CommittedObjects,
  clearPrefix,
  ensureBucket,
  listObjects,
  openUploads,
  type S3Config,
  withS3,
} from "../helpers.ts";

export interface S3ConformanceOptions {
  readonly s3: S3Config;
  readonly bucket: string;
  /** Where the job keeps its checkpoints: the scenario's directory, or S3 beside the output. */
  readonly checkpoints: "file-system" | "s3";
  /**
   * "small": every part file below S3's 5 MiB part, one upload part each. "multipart": records
   * padded so that part files span several 5 MiB upload parts.
   */
  readonly parts: "small" | "multipart";
  /** Which S3 implementation, for the suite's name. */
  readonly server: string;
}

/**
 * Per scenario of a "multipart" definition, the most upload parts one committed part file
 * had (from its ETag, `"…-<parts>"`), read at teardown: the test file checks that some
 * scenarios did commit part files of several parts.
 */
export const uploadPartsSeen = new Map<string, number>();

const scopePrefix = (scope: ScenarioScope) => `c/${scope.id}`;
const outPrefix = (scope: ScenarioScope) => `${scopePrefix(scope)}/out`;
const checkpointsUrl = (bucket: string, scope: ScenarioScope) => `s3://${bucket}/${scopePrefix(scope)}/checkpoints`;
/** About 2 KiB a record: 5,000 records make 10 MiB, two to three upload parts per part file. */
const PADDING = "x".repeat(2000);

export function createSink(context: SinkFactoryContext<S3ConformanceOptions>) {
  const { s3, bucket, parts } = context.options;
  return s3FileSink<ConformanceRecord>({
    bucket,
    prefix: outPrefix(context.scope),
    connection: s3,
    partSizeBytes: MIN_PART_BYTES,
    // Two buckets, so a transaction spans several part files; one for multipart parts, so they grow faster.
    bucketAssigner: (r) => (parts === "multipart" ? "all" : `bucket-${r.id % 2}`),
    ...(parts === "multipart" ? { encoder: (r: ConformanceRecord) => JSON.stringify({ ...r, pad: PADDING }) } : {}),
  });
}

export function createCheckpointStorage(context: SinkFactoryContext<S3ConformanceOptions>) {
  return new S3CheckpointStorage({
    location: checkpointsUrl(context.options.bucket, context.scope),
    connection: context.options.s3,
  });
}

export function s3FileSinkDefinition(options: S3ConformanceOptions): ConformanceDefinition<S3ConformanceOptions> {
  const { s3, bucket } = options;
  // One reader a scenario, kept across its polls (it fetches only objects it has not read).
  const readers = new Map<string, CommittedObjects>();
  const readerOf = (scope: ScenarioScope) => {
    let reader = readers.get(scope.id);
    if (!reader) {
      reader = new CommittedObjects(s3, bucket, `${outPrefix(scope)}/`);
      readers.set(scope.id, reader);
    }
    return reader;
  };
  return {
    name: `s3 file sink on ${options.server} (${options.parts} parts, checkpoints on ${options.checkpoints === "s3" ? "S3" : "the file system"})`,
    sinkModule: new URL(import.meta.url),
    sinkOptions: options,
    ...(options.checkpoints === "s3" ? { checkpointStorageExport: "createCheckpointStorage" } : {}),
    guarantee: DeliveryGuarantee.EXACTLY_ONCE,
    setup: () => withS3(s3, (client) => ensureBucket(client, bucket)),
    teardown: (scope) => {
      readers.get(scope.id)?.close();
      readers.delete(scope.id);
      return withS3(s3, async (client) => {
        if (options.parts === "multipart") {
          const parts = (await listObjects(client, bucket, `${outPrefix(scope)}/`)).map((o) =>
            Number(/-(\d+)"?$/.exec(o.etag)?.[1] ?? 1),
          );
          uploadPartsSeen.set(scope.id, Math.max(0, ...parts));
        }
        await clearPrefix(client, bucket, `${scopePrefix(scope)}/`);
      });
    },
    readCommitted: (scope) => readerOf(scope).ids(),
    probeLingering: (scope) =>
      withS3(s3, async (client) => (await openUploads(client, bucket, `${scopePrefix(scope)}/`)).map((u) => u.key)),
  };
}
