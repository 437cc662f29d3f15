// The write-ahead sink on a Redis Cluster of three masters: its key prefix carries a hash tag,
// so each call's operations and marker are in one slot.
// A variant of a suite that runs whole elsewhere: `pnpm test` runs the scenarios that reach what it
// changes (variantScenarios("redis-cluster"), with the reason), `pnpm test:full` all of them.
import { conformanceSuite } from "@exactly/conformance";
import { redisClusterNodes } from "@exactly/testkit/endpoints";
import { variantScenarios } from "@exactly/testkit/variant-scenarios";
import { describe, it } from "vitest";
import { redisWriteAheadDefinition } from "./conformance/redis-sinks.conformance.ts";

conformanceSuite({ describe, it }, redisWriteAheadDefinition({ clusterNodes: redisClusterNodes() }), {
  only: variantScenarios("redis-cluster"),
});
