// The S3 file sink against the conformance suite on the real S3 server, part files below one
// upload part and checkpoints on the file system (the other files vary one of these).
import { conformanceSuite } from "@exactly/conformance";
import { s3Config } from "@exactly/testkit/endpoints";
import { describe, it } from "vitest";
import { s3FileSinkDefinition } from "./conformance/s3-file-sink.conformance.ts";

conformanceSuite(
  { describe, it },
  s3FileSinkDefinition({
    server: "MinIO",
    s3: s3Config(),
    bucket: "exactly-conformance",
    checkpoints: "file-system",
    parts: "small",
  }),
);
