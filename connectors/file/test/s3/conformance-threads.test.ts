// The S3 file sink's suite with its scenarios' subtasks on two worker threads (each
// subtask's S3 client made in its own thread), beside the one-loop suites: the "threads"
// variant's scenarios (@exactly/testkit/variant-scenarios), every one in `pnpm test:full`.
import { conformanceSuite } from "@exactly/conformance";
import { s3Config } from "@exactly/testkit/endpoints";
import { variantScenarios } from "@exactly/testkit/variant-scenarios";
import { describe, it } from "vitest";
import { s3FileSinkDefinition } from "./conformance/s3-file-sink.conformance.ts";

const definition = s3FileSinkDefinition({
  server: "MinIO",
  s3: s3Config(),
  bucket: "exactly-conformance",
  checkpoints: "file-system",
  parts: "small",
});
conformanceSuite(
  { describe, it },
  { ...definition, name: `${definition.name} on two worker threads`, workers: 2 },
  { only: variantScenarios("threads") },
);
