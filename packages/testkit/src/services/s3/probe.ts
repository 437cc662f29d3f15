// S3 is healthy when it accepts our credentials: an open port alone says nothing about the keys.

import { ListBucketsCommand, S3Client } from "@aws-sdk/client-s3";
import type { S3Endpoint } from "./endpoint.ts";

export async function probeS3(endpoint: S3Endpoint): Promise<string> {
  const client = new S3Client({
    endpoint: endpoint.endpoint,
    region: endpoint.region,
    forcePathStyle: endpoint.forcePathStyle,
    credentials: { accessKeyId: endpoint.accessKeyId, secretAccessKey: endpoint.secretAccessKey },
    maxAttempts: 1,
  });
  try {
    const result = await client.send(new ListBucketsCommand({}), { abortSignal: AbortSignal.timeout(5_000) });
    return `S3 answers ListBuckets (${result.Buckets?.length ?? 0} buckets)`;
  } finally {
    client.destroy();
  }
}
