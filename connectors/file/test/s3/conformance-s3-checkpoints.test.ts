// The S3 file sink against the conformance suite with the job's checkpoints in
// S3CheckpointStorage, beside the output on the same server.
// A variant of a suite that runs whole elsewhere: `pnpm test` runs the scenarios that reach what it
// changes (variantScenarios("s3-checkpoints"), with the reason), `pnpm test:full` all of them.
import { conformanceSuite } from "@exactly/conformance";
import { s3Config } from "@exactly/testkit/endpoints";
import { variantScenarios } from "@exactly/testkit/variant-scenarios";
import { describe, it } from "vitest";
import { s3FileSinkDefinition } from "./conformance/s3-file-sink.conformance.ts";

conformanceSuite(
  { describe, it },
  s3FileSinkDefinition({
    server: "MinIO",
    s3: s3Config(),
    bucket: "exactly-conformance",
    checkpoints: "s3",
    parts: "small",
  }),
  { only: variantScenarios("s3-checkpoints") },
);
