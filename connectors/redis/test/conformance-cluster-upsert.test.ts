// The upsert sink on a Redis Cluster of three masters: each call's keys in one slot, the calls
// of a flush spread over the masters.
import { conformanceSuite } from "@exactly/conformance";
import { describe, it } from "vitest";
import { redisClusterNodes } from "../../../test/services/endpoints.ts";
import { redisUpsertDefinition } from "./conformance/redis-sinks.conformance.ts";

conformanceSuite({ describe, it }, redisUpsertDefinition({ clusterNodes: redisClusterNodes() }));
