// S3CheckpointStorage's suite on a second S3 implementation (moto).
import { s3MotoConfig } from "@exactly/testkit/endpoints";
import { s3CheckpointStorageSuite } from "./s3-checkpoint-storage-suite.ts";

s3CheckpointStorageSuite("moto", s3MotoConfig);
