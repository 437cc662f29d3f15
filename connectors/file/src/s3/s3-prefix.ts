import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  type S3Client,
} from "@aws-sdk/client-s3";
import { createS3Client, requireSafeKeyPrefix, type S3ConnectionOptions, s3ErrorName } from "./s3-connection.ts";

export interface OpenUpload {
  readonly key: string;
  readonly uploadId: string;
  readonly initiated?: Date;
}

/**
 * What lies under one key prefix of a bucket, as a reader or an operator sees it: the
 * published objects and the multipart uploads still open. The sink's writer lists its
 * lingering uploads through it; the demo and the tools read output through it.
 */
export class S3Prefix {
  readonly bucket: string;
  readonly prefix: string;
  private readonly connection: S3ConnectionOptions;
  private readonly shared: (() => S3Client) | undefined;
  private s3: S3Client | undefined;

  /** `client`: an owner's client to use (the owner closes it), instead of one of its own. */
  constructor(options: { bucket: string; prefix?: string; connection?: S3ConnectionOptions; client?: () => S3Client }) {
    this.bucket = options.bucket;
    this.prefix = requireSafeKeyPrefix(options.prefix ?? "");
    this.connection = options.connection ?? {};
    this.shared = options.client;
  }

  get client(): S3Client {
    if (this.shared) return this.shared();
    this.s3 ??= createS3Client(this.connection);
    return this.s3;
  }

  /** `<prefix>/`, or '' for the whole bucket. */
  get base(): string {
    return this.prefix === "" ? "" : `${this.prefix}/`;
  }

  /** Creates the bucket unless it exists (and is ours). */
  async ensureBucket(): Promise<void> {
    try {
      await this.client.send(new CreateBucketCommand({ Bucket: this.bucket }));
    } catch (error) {
      const name = s3ErrorName(error);
      if (name !== "BucketAlreadyOwnedByYou" && name !== "BucketAlreadyExists") throw error;
    }
  }

  /** Every object under the prefix, page by page. */
  async *objects(): AsyncGenerator<{ key: string; size: number }> {
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: this.base,
          ...(token === undefined ? {} : { ContinuationToken: token }),
        }),
      );
      for (const o of page.Contents ?? []) if (o.Key) yield { key: o.Key, size: o.Size ?? 0 };
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
  }

  async readText(key: string): Promise<string> {
    const result = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    return (await result.Body?.transformToString("utf8")) ?? "";
  }

  /**
   * The multipart uploads open under the prefix, page by page. The whole bucket is listed
   * and filtered here: S3 treats `Prefix` as a key prefix, but MinIO matches it against
   * whole object keys only and answers an empty list, which would hide every upload.
   */
  async *openUploads(): AsyncGenerator<OpenUpload> {
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      const page = await this.client.send(
        new ListMultipartUploadsCommand({
          Bucket: this.bucket,
          ...(keyMarker === undefined ? {} : { KeyMarker: keyMarker }),
          ...(uploadIdMarker === undefined ? {} : { UploadIdMarker: uploadIdMarker }),
        }),
      );
      for (const upload of page.Uploads ?? []) {
        if (!upload.Key || !upload.UploadId || !upload.Key.startsWith(this.base)) continue;
        yield {
          key: upload.Key,
          uploadId: upload.UploadId,
          ...(upload.Initiated ? { initiated: upload.Initiated } : {}),
        };
      }
      if (!page.IsTruncated) return;
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
      if (keyMarker === undefined && uploadIdMarker === undefined) return;
    }
  }

  /** Aborts an upload; one already gone (aborted, completed, expired) is fine. */
  async abortUpload(upload: { key: string; uploadId: string }): Promise<void> {
    try {
      await this.client.send(
        new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: upload.key, UploadId: upload.uploadId }),
      );
    } catch (error) {
      const name = s3ErrorName(error);
      if (name !== "NoSuchUpload" && name !== "NotFound" && name !== "NoSuchKey") throw error;
    }
  }

  close(): void {
    this.s3?.destroy();
    this.s3 = undefined;
  }
}
