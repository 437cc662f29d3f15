// The write-ahead sink on a Redis Cluster of three masters: its key prefix carries a hash tag,
// so each call's operations and marker are in one slot.
import { conformanceSuite } from "@exactly/conformance";
import { describe, it } from "vitest";
import { redisClusterNodes } from "../../../test/services/endpoints.ts";
import { redisWriteAheadDefinition } from "./conformance/redis-sinks.conformance.ts";

conformanceSuite({ describe, it }, redisWriteAheadDefinition({ clusterNodes: redisClusterNodes() }));
