// The S3 file sink's whole suite with every scenario's subtasks on two worker threads (each
// subtask's S3 client made in its own thread), beside the one-loop suites.
import { conformanceSuite } from "@exactly/conformance";
import { describe, it } from "vitest";
import { s3Config } from "../../../../test/services/endpoints.ts";
import { s3FileSinkDefinition } from "./conformance/s3-file-sink.conformance.ts";

const definition = s3FileSinkDefinition({
  server: "MinIO",
  s3: s3Config(),
  bucket: "exactly-conformance",
  checkpoints: "file-system",
  parts: "small",
});
conformanceSuite({ describe, it }, { ...definition, name: `${definition.name} on two worker threads`, workers: 2 });
