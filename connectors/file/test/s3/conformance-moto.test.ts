// The S3 file sink against the conformance suite on a second S3 implementation (moto), which
// answers a repeated or impossible completion differently from MinIO, with checkpoints on S3.
// A variant of a suite that runs whole elsewhere: `pnpm test` runs the scenarios that reach what it
// changes (variantScenarios("second-s3-server"), with the reason), `pnpm test:full` all of them.
import { conformanceSuite } from "@exactly/conformance";
import { s3MotoConfig } from "@exactly/testkit/endpoints";
import { variantScenarios } from "@exactly/testkit/variant-scenarios";
import { describe, it } from "vitest";
import { s3FileSinkDefinition } from "./conformance/s3-file-sink.conformance.ts";

conformanceSuite(
  { describe, it },
  s3FileSinkDefinition({
    server: "moto",
    s3: s3MotoConfig(),
    bucket: "exactly-conformance",
    checkpoints: "s3",
    parts: "small",
  }),
  { only: variantScenarios("second-s3-server") },
);
