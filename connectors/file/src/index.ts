/**
 * `@exactly/file`: the rolling file sinks on local disk, and what they share with the S3
 * ones of `@exactly/file/s3` (the sink classes, bucket assigners, the `RecoverableWriter` port).
 * @module @exactly/file
 */
export {
  type BucketAssigner,
  basePathBucketAssigner,
  UnsafeBucketPathError,
  validateBucket,
} from "./bucket-assigner.ts";
export { AtLeastOnceFileSink, FileAtLeastOnceSink } from "./file-at-least-once-sink.ts";
export {
  type ExactlyOnceFileSinkOptions,
  FileSink,
  type FileTransaction,
  FileTwoPhaseSink,
  type FileTwoPhaseSinkOptions,
} from "./file-two-phase-sink.ts";
export { type LocalFileSinkOptions, localFileSink } from "./local/local-file-sink.ts";
export { type LocalLingeringOptions, LocalLingeringParts } from "./local/local-lingering-parts.ts";
export { LocalRecoverableWriter } from "./local/local-recoverable-writer.ts";
export type { FileSinkOptions } from "./options.ts";
export {
  type LingeringFilter,
  type OpenPart,
  type PartDescriptor,
  PartExistsError,
  PartLostError,
  PlantedFileError,
  type RecoverableWriter,
} from "./recoverable-writer.ts";
export { InvalidLineError } from "./rolling-parts.ts";
export type { RollingPolicy } from "./rolling-policy.ts";
