// The S3 file sink against the conformance suite with part files that span several 5 MiB
// upload parts, so crashes land between parts of one upload.
// A variant of a suite that runs whole elsewhere: `pnpm test` runs the scenarios that reach what it
// changes (variantScenarios("multipart-parts"), with the reason), `pnpm test:full` all of them.
import { conformanceSuite } from "@exactly/conformance";
import { s3Config } from "@exactly/testkit/endpoints";
import { variantScenarios } from "@exactly/testkit/variant-scenarios";
import { describe, expect, it } from "vitest";
import { s3FileSinkDefinition, uploadPartsSeen } from "./conformance/s3-file-sink.conformance.ts";

conformanceSuite(
  { describe, it },
  s3FileSinkDefinition({
    server: "MinIO",
    s3: s3Config(),
    bucket: "exactly-conformance",
    checkpoints: "file-system",
    parts: "multipart",
  }),
  { only: variantScenarios("multipart-parts") },
);

// Runs after the suite: the definition tested what it is for only if committed part files did span parts.
describe("s3 file sink, multipart parts", () => {
  it("committed part files of several upload parts in some scenarios", () => {
    const several = [...uploadPartsSeen.values()].filter((parts) => parts >= 2);
    expect(uploadPartsSeen.size).toBeGreaterThan(0);
    expect(several.length).toBeGreaterThan(0);
  });
});
