import { ConfigurationError, DeliveryGuarantee } from "@exactly/core";
import { FileAtLeastOnceSink } from "../file-at-least-once-sink.ts";
import { FileTwoPhaseSink, type FileTwoPhaseSinkOptions } from "../file-two-phase-sink.ts";
import { resolveRollingPolicy } from "../rolling-policy.ts";
import { MAX_PARTS, S3RecoverableWriter, type S3WriterOptions } from "./s3-recoverable-writer.ts";

export interface S3FileSinkOptions<T> extends Omit<FileTwoPhaseSinkOptions<T>, "writer">, S3WriterOptions {
  /**
   * EXACTLY_ONCE (default): {@link FileTwoPhaseSink}; a checkpoint's parts are open multipart uploads
   * until the checkpoint completes. AT_LEAST_ONCE: {@link FileAtLeastOnceSink}; each part is
   * completed at the barrier that closes it.
   */
  readonly guarantee?: DeliveryGuarantee;
}

/**
 * The rolling file sink on S3, of the class that gives the asked guarantee: the same bucket
 * assigner, rolling policy and part names as on local disk, over {@link S3RecoverableWriter}.
 *
 * Set `transactionTimeoutMs` to the bucket's AbortIncompleteMultipartUpload age: S3 drops
 * an upload older than that, and with it a pre-committed checkpoint's data.
 */
export function s3FileSink<T>(options: S3FileSinkOptions<T>): FileTwoPhaseSink<T> | FileAtLeastOnceSink<T> {
  const {
    guarantee = DeliveryGuarantee.EXACTLY_ONCE,
    bucket,
    prefix,
    connection,
    partSizeBytes,
    uploadConcurrency,
    spoolDirectory,
    ...rest
  } = options;
  const writer = new S3RecoverableWriter({
    bucket,
    ...(prefix === undefined ? {} : { prefix }),
    ...(connection === undefined ? {} : { connection }),
    ...(partSizeBytes === undefined ? {} : { partSizeBytes }),
    ...(uploadConcurrency === undefined ? {} : { uploadConcurrency }),
    ...(spoolDirectory === undefined ? {} : { spoolDirectory }),
  });
  const { maxPartBytes } = resolveRollingPolicy(rest.rollingPolicy);
  if (Math.ceil(maxPartBytes / writer.partSizeBytes) >= MAX_PARTS) {
    throw new ConfigurationError(
      "partSizeBytes",
      `${writer.partSizeBytes} bytes per upload part cannot hold a part file of rollingPolicy.maxPartBytes (${maxPartBytes}) in S3's ${MAX_PARTS} parts`,
    );
  }
  switch (guarantee) {
    case DeliveryGuarantee.EXACTLY_ONCE:
      return new FileTwoPhaseSink({ ...rest, writer });
    case DeliveryGuarantee.AT_LEAST_ONCE:
      if (rest.transactionTimeoutMs !== undefined) {
        throw new ConfigurationError(
          "transactionTimeoutMs",
          "applies to EXACTLY_ONCE only: at-least-once parts are published at the barrier",
        );
      }
      return new FileAtLeastOnceSink({ ...rest, writer });
    default:
      throw new ConfigurationError("guarantee", "the file sink supports EXACTLY_ONCE and AT_LEAST_ONCE");
  }
}
