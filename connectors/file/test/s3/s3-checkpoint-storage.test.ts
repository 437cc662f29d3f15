// S3CheckpointStorage's suite on the main S3 server (MinIO).
import { s3Config } from "@exactly/testkit/endpoints";
import { s3CheckpointStorageSuite } from "./s3-checkpoint-storage-suite.ts";

s3CheckpointStorageSuite("MinIO", s3Config);
