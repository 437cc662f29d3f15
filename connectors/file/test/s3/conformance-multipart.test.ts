// The S3 file sink against the conformance suite with part files that span several 5 MiB
// upload parts, so crashes land between parts of one upload.
import { conformanceSuite } from "@exactly/conformance";
import { describe, it } from "vitest";
import { s3Config } from "../../../../test/services/endpoints.ts";
import { s3FileSinkDefinition } from "./conformance/s3-file-sink.conformance.ts";

conformanceSuite(
  { describe, it },
  s3FileSinkDefinition({
    s3: s3Config(),
    bucket: "exactly-conformance",
    checkpoints: "file-system",
    parts: "multipart",
  }),
);
