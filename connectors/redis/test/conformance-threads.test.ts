// Both Redis sinks' suites with their scenarios' subtasks on two worker threads (each
// subtask's client made in its own thread), beside the one-loop suites: the "threads"
// variant's scenarios (@exactly/testkit/variant-scenarios), every one in `pnpm test:full`.
import { conformanceSuite } from "@exactly/conformance";
import { redisUrl } from "@exactly/testkit/endpoints";
import { variantScenarios } from "@exactly/testkit/variant-scenarios";
import { describe, it } from "vitest";
import { redisUpsertDefinition, redisWriteAheadDefinition } from "./conformance/redis-sinks.conformance.ts";

for (const definition of [redisUpsertDefinition(redisUrl()), redisWriteAheadDefinition(redisUrl())]) {
  conformanceSuite(
    { describe, it },
    { ...definition, name: `${definition.name} on two worker threads`, workers: 2 },
    { only: variantScenarios("threads") },
  );
}
