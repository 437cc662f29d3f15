import { ListPartsCommand } from "@aws-sdk/client-s3";
import type { LingeringWork, LingeringWorkFinder, StateReferences } from "@exactly/core";
import { transactionsInState } from "@exactly/core/internal";
import type { S3ConnectionOptions } from "./s3-connection.ts";
import { s3ErrorName } from "./s3-connection.ts";
import { S3Prefix } from "./s3-prefix.ts";

export interface S3LingeringOptions {
  readonly bucket: string;
  /** The sink's key prefix (the S3 file sink's `prefix`). */
  readonly prefix?: string;
  readonly connection?: S3ConnectionOptions;
}

/**
 * The open multipart uploads under one S3 file sink's prefix, found from outside the job.
 * An upload that is never completed or aborted keeps its parts (billed) until the bucket's
 * `AbortIncompleteMultipartUpload` rule, if there is one. A listed upload is confirmed with
 * ListParts before it is reported: MinIO goes on listing some uploads it has completed
 * (ListParts then answers NoSuchUpload), and those are not lingering.
 */
export class S3LingeringUploads implements LingeringWorkFinder {
  readonly description: string;
  private readonly listing: S3Prefix;

  constructor(options: S3LingeringOptions) {
    this.listing = new S3Prefix(options);
    this.description = `S3 multipart uploads under s3://${this.listing.bucket}/${this.listing.base}`;
  }

  async list(): Promise<LingeringWork[]> {
    const found: LingeringWork[] = [];
    for await (const upload of this.listing.openUploads()) {
      const parts = await this.partsOf(upload.key, upload.uploadId);
      if (parts === undefined) continue;
      found.push({
        id: upload.key,
        reference: upload.uploadId,
        startedAt: upload.initiated?.getTime(),
        detail: `upload ${upload.uploadId}, ${parts.count} part(s), ${parts.bytes} B`,
      });
    }
    return found;
  }

  /** The parts an upload holds, or undefined when the server says it is no longer open. */
  private async partsOf(key: string, uploadId: string): Promise<{ count: number; bytes: number } | undefined> {
    let count = 0;
    let bytes = 0;
    let marker: string | undefined;
    try {
      for (;;) {
        const page = await this.listing.client.send(
          new ListPartsCommand({
            Bucket: this.listing.bucket,
            Key: key,
            UploadId: uploadId,
            ...(marker === undefined ? {} : { PartNumberMarker: marker }),
          }),
        );
        for (const part of page.Parts ?? []) {
          count++;
          bytes += part.Size ?? 0;
        }
        if (!page.IsTruncated || page.NextPartNumberMarker === undefined) return { count, bytes };
        marker = page.NextPartNumberMarker;
      }
    } catch (error) {
      if (s3ErrorName(error) === "NoSuchUpload") return undefined;
      throw error;
    }
  }

  referencesIn(sinkState: unknown): StateReferences {
    const { pending, open } = transactionsInState(sinkState);
    const uploadIds = (txns: unknown[]) =>
      txns.flatMap((t) => {
        const parts = (t as { parts?: unknown }).parts;
        if (!Array.isArray(parts)) return [];
        return parts.flatMap((p) => {
          const uploadId = (p as { recoverable?: { uploadId?: unknown } } | null)?.recoverable?.uploadId;
          return typeof uploadId === "string" ? [uploadId] : [];
        });
      });
    return { pending: uploadIds(pending), open: uploadIds(open) };
  }

  async abort(work: LingeringWork): Promise<void> {
    await this.listing.abortUpload({ key: work.id, uploadId: work.reference });
  }

  async close(): Promise<void> {
    this.listing.close();
  }
}
