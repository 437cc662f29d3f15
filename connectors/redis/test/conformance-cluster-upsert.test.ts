// The upsert sink on a Redis Cluster of three masters: each call's keys in one slot, the calls
// of a flush spread over the masters.
// A variant of a suite that runs whole elsewhere: `pnpm test` runs the scenarios that reach what it
// changes (variantScenarios("redis-cluster"), with the reason), `pnpm test:full` all of them.
import { conformanceSuite } from "@exactly/conformance";
import { redisClusterNodes } from "@exactly/testkit/endpoints";
import { variantScenarios } from "@exactly/testkit/variant-scenarios";
import { describe, it } from "vitest";
import { redisUpsertDefinition } from "./conformance/redis-sinks.conformance.ts";

conformanceSuite({ describe, it }, redisUpsertDefinition({ clusterNodes: redisClusterNodes() }), {
  only: variantScenarios("redis-cluster"),
});
