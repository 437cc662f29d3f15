// The S3 file sink's behaviour suite on the main S3 server (MinIO).
import { s3Config } from "../../../../test/services/endpoints.ts";
import { s3SinkSuite } from "./s3-sink-suite.ts";

s3SinkSuite("MinIO", s3Config);
