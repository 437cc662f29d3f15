// One file per sink, so the two suites run side by side in CI's workers.
import { conformanceSuite } from "@exactly/conformance";
import { describe, it } from "vitest";
import { pgUrl } from "../../../test/services/endpoints.ts";
import { postgresDefinition } from "./conformance/postgres-sinks.conformance.ts";

conformanceSuite({ describe, it }, postgresDefinition(pgUrl(), "write-ahead"));
