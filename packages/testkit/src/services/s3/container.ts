// Step 2 for S3: MinIO's image, with random credentials for this run.

import { randomBytes } from "node:crypto";
import { MinioContainer } from "@testcontainers/minio";
import { serviceContainer } from "../core/container.ts";
import type { ServiceContainer } from "../core/service-module.ts";
import { DEFAULT_S3_REGION, type S3Endpoint } from "./endpoint.ts";

const MINIO_IMAGE = "minio/minio:RELEASE.2025-09-07T16-13-09Z";

export async function startS3Container(): Promise<ServiceContainer<S3Endpoint>> {
  const accessKeyId = `exactly${randomBytes(6).toString("hex")}`;
  const secretAccessKey = randomBytes(24).toString("hex");
  const container = await new MinioContainer(MINIO_IMAGE)
    .withUsername(accessKeyId)
    .withPassword(secretAccessKey)
    .start();
  return serviceContainer(container, {
    endpoint: container.getConnectionUrl(),
    region: DEFAULT_S3_REGION,
    accessKeyId,
    secretAccessKey,
    forcePathStyle: true,
  });
}
