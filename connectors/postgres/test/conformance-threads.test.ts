// Both Postgres sinks' suites with their scenarios' subtasks on two worker threads
// (each subtask's connections opened in its own thread), beside the one-loop suites: the "threads"
// variant's scenarios (test/support/variant-scenarios.ts), every one in `pnpm test:full`.
import { conformanceSuite } from "@exactly/conformance";
import { describe, it } from "vitest";
import { pgUrl } from "../../../test/services/endpoints.ts";
import { variantScenarios } from "../../../test/support/variant-scenarios.ts";
import { postgresDefinition } from "./conformance/postgres-sinks.conformance.ts";

for (const kind of ["two-phase", "write-ahead"] as const) {
  const definition = postgresDefinition(pgUrl(), kind);
  conformanceSuite(
    { describe, it },
    { ...definition, name: `${definition.name} on two worker threads`, workers: 2 },
    { only: variantScenarios("threads") },
  );
}
