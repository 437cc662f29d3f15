// Smoke test of the S3 service: multipart uploads as the S3 file sink uses them. One upload is
// created, listed, completed and read back; another is aborted and disappears.

import { createHash, randomUUID } from "node:crypto";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListPartsCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { afterAll, describe, expect, it } from "vitest";
import { s3Config } from "../endpoints.ts";

const run = randomUUID().slice(0, 8);
const bucket = `exactly-smoke-${run}`;
// S3 rejects parts below 5 MiB except the last; the first part is exactly that minimum.
const firstPart = Buffer.alloc(5 * 1024 * 1024, "a");
const lastPart = Buffer.from(`last part of ${run}\n`);
const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

describe("S3 service", () => {
  // Created inside the test, not in a hook: without an endpoint the test itself fails (a failing
  // beforeAll would only mark it skipped).
  let client: S3Client | undefined;

  afterAll(async () => {
    const s3 = client;
    if (!s3) return;
    const uploads = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    for (const upload of uploads.Uploads ?? []) {
      await s3.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: upload.Key, UploadId: upload.UploadId }));
    }
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "completed.bin" }));
    await s3.send(new DeleteBucketCommand({ Bucket: bucket }));
    s3.destroy();
  });

  it("creates, lists, completes and aborts multipart uploads", async () => {
    const s3 = new S3Client(s3Config());
    client = s3;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const uploadKeys = async () =>
      ((await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads ?? []).map((u) => [
        u.Key,
        u.UploadId,
      ]);

    const completed = await s3.send(
      new CreateMultipartUploadCommand({ Bucket: bucket, Key: "completed.bin", Metadata: { nonce: run } }),
    );
    const aborted = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: "aborted.bin" }));
    expect(completed.UploadId).toBeTruthy();
    expect(aborted.UploadId).toBeTruthy();
    expect(await uploadKeys()).toEqual(
      expect.arrayContaining([
        ["completed.bin", completed.UploadId],
        ["aborted.bin", aborted.UploadId],
      ]),
    );

    const parts = [];
    for (const [index, body] of [firstPart, lastPart].entries()) {
      const part = await s3.send(
        new UploadPartCommand({
          Bucket: bucket,
          Key: "completed.bin",
          UploadId: completed.UploadId,
          PartNumber: index + 1,
          Body: body,
        }),
      );
      parts.push({ PartNumber: index + 1, ETag: part.ETag });
    }
    await s3.send(
      new UploadPartCommand({
        Bucket: bucket,
        Key: "aborted.bin",
        UploadId: aborted.UploadId,
        PartNumber: 1,
        Body: lastPart,
      }),
    );
    const listed = await s3.send(
      new ListPartsCommand({ Bucket: bucket, Key: "completed.bin", UploadId: completed.UploadId }),
    );
    expect(listed.Parts?.map((p) => [p.PartNumber, p.Size])).toEqual([
      [1, firstPart.length],
      [2, lastPart.length],
    ]);

    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: "completed.bin",
        UploadId: completed.UploadId,
        MultipartUpload: { Parts: parts },
      }),
    );
    await s3.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: "aborted.bin", UploadId: aborted.UploadId }));

    expect(await uploadKeys()).toEqual([]);
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "completed.bin" }));
    expect(head.ContentLength).toBe(firstPart.length + lastPart.length);
    expect(head.Metadata).toEqual({ nonce: run });
    const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "completed.bin" }));
    const body = Buffer.from((await object.Body?.transformToByteArray()) ?? []);
    expect(sha256(body)).toBe(sha256(Buffer.concat([firstPart, lastPart])));

    // The aborted upload is gone: no object, and its upload id no longer exists.
    await expect(s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "aborted.bin" }))).rejects.toMatchObject({
      name: "NotFound",
    });
    await expect(
      s3.send(new ListPartsCommand({ Bucket: bucket, Key: "aborted.bin", UploadId: aborted.UploadId })),
    ).rejects.toMatchObject({ name: "NoSuchUpload" });
  });
});
