// Both Redis sinks' suites with their scenarios' subtasks on two worker threads (each
// subtask's client made in its own thread), beside the one-loop suites: the "threads"
// variant's scenarios (test/support/variant-scenarios.ts), every one in `pnpm test:full`.
import { conformanceSuite } from "@exactly/conformance";
import { describe, it } from "vitest";
import { redisUrl } from "../../../test/services/endpoints.ts";
import { variantScenarios } from "../../../test/support/variant-scenarios.ts";
import { redisUpsertDefinition, redisWriteAheadDefinition } from "./conformance/redis-sinks.conformance.ts";

for (const definition of [redisUpsertDefinition(redisUrl()), redisWriteAheadDefinition(redisUrl())]) {
  conformanceSuite(
    { describe, it },
    { ...definition, name: `${definition.name} on two worker threads`, workers: 2 },
    { only: variantScenarios("threads") },
  );
}
