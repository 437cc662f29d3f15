// The S3 file sink's behaviour suite on a second S3 implementation (moto), which answers
// some calls differently from MinIO.
import { s3MotoConfig } from "@exactly/testkit/endpoints";
import { s3SinkSuite } from "./s3-sink-suite.ts";

s3SinkSuite("moto", s3MotoConfig);
