// Both Redis sinks' whole suites with every scenario's subtasks on two worker threads (each
// subtask's client made in its own thread), beside the one-loop suites.
import { conformanceSuite } from "@exactly/conformance";
import { describe, it } from "vitest";
import { redisUrl } from "../../../test/services/endpoints.ts";
import { redisUpsertDefinition, redisWriteAheadDefinition } from "./conformance/redis-sinks.conformance.ts";

for (const definition of [redisUpsertDefinition(redisUrl()), redisWriteAheadDefinition(redisUrl())]) {
  conformanceSuite({ describe, it }, { ...definition, name: `${definition.name} on two worker threads`, workers: 2 });
}
