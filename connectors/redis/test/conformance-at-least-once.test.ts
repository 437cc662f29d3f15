// One file per sink, so suites run side by side in CI's workers.
import { conformanceSuite } from "@exactly/conformance";
import { redisUrl } from "@exactly/testkit/endpoints";
import { describe, it } from "vitest";
import { redisAtLeastOnceDefinition } from "./conformance/redis-sinks.conformance.ts";

conformanceSuite({ describe, it }, redisAtLeastOnceDefinition(redisUrl()));
