/**
 * Reading what the S3 file sink left on the real server, as any reader would: the objects
 * under a prefix (committed output) and the multipart uploads still open (in progress or
 * lingering). Every test file works in a bucket of its own.
 */

import { randomBytes } from "node:crypto";
import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import type { S3Config } from "@exactly/testkit/endpoints";
import { idCounts } from "@exactly/testkit/ids";
import { afterAll } from "vitest";

export type { S3Config };

export function s3Client(config: S3Config): S3Client {
  return new S3Client({ ...config, maxAttempts: 3 });
}

export async function withS3<R>(config: S3Config, use: (client: S3Client) => Promise<R>): Promise<R> {
  const client = s3Client(config);
  try {
    return await use(client);
  } finally {
    client.destroy();
  }
}

export async function ensureBucket(client: S3Client, bucket: string): Promise<void> {
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (error) {
    const name = (error as { name?: string }).name;
    if (name !== "BucketAlreadyOwnedByYou" && name !== "BucketAlreadyExists") throw error;
  }
}

export async function listKeys(client: S3Client, bucket: string, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }),
    );
    for (const o of page.Contents ?? []) if (o.Key) keys.push(o.Key);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return keys;
}

/** Objects under `prefix` with their ETags (a multipart object's ends in `-<parts>`). */
export async function listObjects(
  client: S3Client,
  bucket: string,
  prefix: string,
): Promise<{ key: string; etag: string }[]> {
  const objects: { key: string; etag: string }[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }),
    );
    for (const o of page.Contents ?? []) if (o.Key) objects.push({ key: o.Key, etag: o.ETag ?? "" });
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return objects;
}

export async function readObject(client: S3Client, bucket: string, key: string): Promise<string> {
  const result = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return (await result.Body?.transformToString("utf8")) ?? "";
}

/** Each `id` in the JSON lines of every object under `prefix`. */
export async function idCountsUnder(client: S3Client, bucket: string, prefix: string): Promise<Map<number, number>> {
  const lines: string[] = [];
  for (const key of await listKeys(client, bucket, prefix))
    lines.push(...(await readObject(client, bucket, key)).split("\n"));
  return idCounts(lines);
}

/**
 * A reader that polls the committed objects under `prefix` again and again (the conformance
 * suite's observer reads every ~100 ms while a child runs): each poll lists the prefix and
 * fetches only the objects it has not read at their current ETag. An object rewritten with
 * other content gets another ETag and is read again, so every poll sees what a reader reading
 * everything would; it just does not fetch hundreds of unchanged part files each time.
 */
export class CommittedObjects {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly read = new Map<string, { etag: string; lines: string[] }>();

  constructor(config: S3Config, bucket: string, prefix: string) {
    this.client = s3Client(config);
    this.bucket = bucket;
    this.prefix = prefix;
  }

  /** Each id, as often as the committed objects hold it. */
  async ids(): Promise<number[]> {
    const listed = await listObjects(this.client, this.bucket, this.prefix);
    const stale = listed.filter(({ key, etag }) => this.read.get(key)?.etag !== etag);
    for (let i = 0; i < stale.length; i += 8) {
      await Promise.all(
        stale.slice(i, i + 8).map(async ({ key, etag }) => {
          this.read.set(key, { etag, lines: (await readObject(this.client, this.bucket, key)).split("\n") });
        }),
      );
    }
    const counts = idCounts(listed.flatMap(({ key }) => this.read.get(key)?.lines ?? []));
    return [...counts].flatMap(([id, n]) => Array<number>(n).fill(id));
  }

  close(): void {
    this.client.destroy();
  }
}

/**
 * The multipart uploads open under `prefix`: listed, and confirmed by ListParts. MinIO can
 * keep listing an upload whose completion was cut off by a dead client after it published
 * the object: ListParts answers NoSuchUpload, AbortMultipartUpload answers ok and the
 * listing stays. Such an entry holds no parts and can never be completed, so it is not an
 * open transaction; counting it would blame the sink for the server's listing.
 */
export async function openUploads(
  client: S3Client,
  bucket: string,
  prefix: string,
): Promise<{ key: string; uploadId: string }[]> {
  return stillOpen(client, bucket, await listedUploads(client, bucket, prefix));
}

/**
 * Those of `uploads` the server still holds open, each asked about alone (ListParts): after
 * a restart MinIO's listing of a bucket names none of the uploads made before it.
 */
export async function stillOpen(
  client: S3Client,
  bucket: string,
  uploads: readonly { key: string; uploadId: string }[],
): Promise<{ key: string; uploadId: string }[]> {
  const open: { key: string; uploadId: string }[] = [];
  for (const upload of uploads) {
    try {
      await client.send(new ListPartsCommand({ Bucket: bucket, Key: upload.key, UploadId: upload.uploadId }));
      open.push(upload);
    } catch (error) {
      if ((error as { name?: string }).name !== "NoSuchUpload") throw error;
    }
  }
  return open;
}

/** Every multipart upload ListMultipartUploads names under `prefix`, confirmed or not. */
export async function listedUploads(
  client: S3Client,
  bucket: string,
  prefix: string,
): Promise<{ key: string; uploadId: string }[]> {
  const uploads: { key: string; uploadId: string }[] = [];
  let keyMarker: string | undefined;
  let uploadIdMarker: string | undefined;
  for (;;) {
    // No Prefix: MinIO matches it against whole keys only, and would hide every upload.
    const page = await client.send(
      new ListMultipartUploadsCommand({
        Bucket: bucket,
        ...(keyMarker ? { KeyMarker: keyMarker } : {}),
        ...(uploadIdMarker ? { UploadIdMarker: uploadIdMarker } : {}),
      }),
    );
    for (const u of page.Uploads ?? []) {
      if (u.Key?.startsWith(prefix) && u.UploadId) uploads.push({ key: u.Key, uploadId: u.UploadId });
    }
    if (!page.IsTruncated) return uploads;
    keyMarker = page.NextKeyMarker;
    uploadIdMarker = page.NextUploadIdMarker;
  }
}

/** Aborts every upload and deletes every object under `prefix`. */
export async function clearPrefix(client: S3Client, bucket: string, prefix: string): Promise<void> {
  for (const u of await listedUploads(client, bucket, prefix)) {
    await client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: u.key, UploadId: u.uploadId }));
  }
  const keys = await listKeys(client, bucket, prefix);
  for (let i = 0; i < keys.length; i += 1000) {
    await client.send(
      new DeleteObjectsCommand({
        Bucket: bucket,
        Delete: { Objects: keys.slice(i, i + 1000).map((Key) => ({ Key })), Quiet: true },
      }),
    );
  }
}

export async function dropBucket(client: S3Client, bucket: string): Promise<void> {
  await clearPrefix(client, bucket, "");
  await client.send(new DeleteBucketCommand({ Bucket: bucket }));
}

/**
 * A bucket of the test file's own, created on first use inside a test (so that a missing
 * server fails the test, not a hook) and dropped with everything in it after the file.
 */
export function testBucket(label: string, config: () => S3Config): { bucket: string; s3: () => Promise<S3Client> } {
  const bucket = `exactly-${label}-${randomBytes(4).toString("hex")}`;
  let client: S3Client | undefined;
  afterAll(async () => {
    if (!client) return;
    await dropBucket(client, bucket);
    client.destroy();
  });
  return {
    bucket,
    s3: async () => {
      if (!client) {
        client = s3Client(config());
        await ensureBucket(client, bucket);
      }
      return client;
    },
  };
}
