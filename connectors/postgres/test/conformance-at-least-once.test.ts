// One file per sink class, so the suites run side by side in CI's workers.
import { conformanceSuite } from "@exactly/conformance";
import { pgUrl } from "@exactly/testkit/endpoints";
import { describe, it } from "vitest";
import { postgresDefinition } from "./conformance/postgres-sinks.conformance.ts";

conformanceSuite({ describe, it }, postgresDefinition(pgUrl(), "at-least-once"));
