// S3CheckpointStorage's suite on a second S3 implementation (moto).
import { s3MotoConfig } from "../../../../test/services/endpoints.ts";
import { s3CheckpointStorageSuite } from "./s3-checkpoint-storage-suite.ts";

s3CheckpointStorageSuite("moto", s3MotoConfig);
