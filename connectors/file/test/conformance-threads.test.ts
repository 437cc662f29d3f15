// The local file sink's suite with the job's subtasks on two worker threads (subtask i on
// thread i mod 2), beside the one-loop suite: the "threads" variant's scenarios
// (@exactly/testkit/variant-scenarios), every one in `pnpm test:full`.
import { conformanceSuite } from "@exactly/conformance";
import { variantScenarios } from "@exactly/testkit/variant-scenarios";
import { describe, it } from "vitest";
import { definition } from "./conformance/local-file-sink.conformance.ts";

conformanceSuite(
  { describe, it },
  { ...definition, name: "local file sink on two worker threads", workers: 2 },
  { only: variantScenarios("threads") },
);
