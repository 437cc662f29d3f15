// One file per sink, so suites run side by side in CI's workers.
import { conformanceSuite } from "@exactly/conformance";
import { describe, it } from "vitest";
import { redisUrl } from "../../../test/services/endpoints.ts";
import { redisUpsertDefinition } from "./conformance/redis-sinks.conformance.ts";

conformanceSuite({ describe, it }, redisUpsertDefinition(redisUrl()));
