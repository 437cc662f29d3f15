// What a test is given to reach the s3 service: its module reads it from the environment,
// and the container, the launcher and the probe make or check one.

export interface S3Endpoint {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Always true here: local S3 servers serve buckets by path, not by virtual host. */
  forcePathStyle: boolean;
}

export const DEFAULT_S3_REGION = "us-east-1";
