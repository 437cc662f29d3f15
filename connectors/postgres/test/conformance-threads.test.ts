// Both Postgres sinks' suites with their scenarios' subtasks on two worker threads
// (each subtask's connections opened in its own thread), beside the one-loop suites: the "threads"
// variant's scenarios (@exactly/testkit/variant-scenarios), every one in `pnpm test:full`.
import { conformanceSuite } from "@exactly/conformance";
import { pgUrl } from "@exactly/testkit/endpoints";
import { variantScenarios } from "@exactly/testkit/variant-scenarios";
import { describe, it } from "vitest";
import { postgresDefinition } from "./conformance/postgres-sinks.conformance.ts";

for (const kind of ["two-phase", "write-ahead"] as const) {
  const definition = postgresDefinition(pgUrl(), kind);
  conformanceSuite(
    { describe, it },
    { ...definition, name: `${definition.name} on two worker threads`, workers: 2 },
    { only: variantScenarios("threads") },
  );
}
