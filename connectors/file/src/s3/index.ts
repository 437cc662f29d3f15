/**
 * `@exactly/file/s3`: the file sink, checkpoint storage and conditional record on S3. Needs
 * the optional peer `@aws-sdk/client-s3`; users who only write local files never load it.
 * @module @exactly/file/s3
 */
export {
  CheckpointOwnershipError,
  S3CheckpointStorage,
  type S3CheckpointStorageOptions,
  type S3Location,
} from "./s3-checkpoint-storage.ts";
export { S3ConditionalRecord, type S3ConditionalRecordOptions } from "./s3-conditional-record.ts";
export {
  createS3Client,
  parseS3Url,
  requireSafeKeyPrefix,
  type S3ConnectionOptions,
} from "./s3-connection.ts";
export { type S3FileSinkOptions, s3FileSink } from "./s3-file-sink.ts";
export { type S3LingeringOptions, S3LingeringUploads } from "./s3-lingering-uploads.ts";
export { type OpenUpload, S3Prefix } from "./s3-prefix.ts";
export {
  MIN_PART_BYTES,
  type MultipartUploadState,
  NONCE_METADATA,
  S3RecoverableWriter,
  type S3WriterOptions,
} from "./s3-recoverable-writer.ts";
