// Redis Cluster: three masters, for the Redis sinks' Cluster tests (every call's keys in one
// slot). EXACTLY_REDIS_CLUSTER_NODES (comma-separated host:port of some of its nodes), else
// Debian's redis-server run three times by the local launcher with `cluster-enabled yes`.
// No container: a cluster in a container announces addresses a client outside cannot reach.

import { envValue } from "../core/env.ts";
import type { ServiceModule } from "../core/service-module.ts";
import type { RedisClusterEndpoint } from "./endpoint.ts";

const NODES = "EXACTLY_REDIS_CLUSTER_NODES";

export const redisCluster: ServiceModule<RedisClusterEndpoint, "redis-cluster"> = {
  name: "redis-cluster",
  envHint: NODES,
  fromEnv(env) {
    const value = envValue(env, NODES);
    if (value === undefined) return undefined;
    const nodes = value
      .split(",")
      .map((n) => n.trim())
      .filter(Boolean);
    for (const node of nodes) {
      if (!/^[^:\s]+:\d+$/.test(node)) throw new Error(`${NODES}: "${node}" is not host:port`);
    }
    return { nodes };
  },
  toEnv: (endpoint) => ({ [NODES]: endpoint.nodes.join(",") }),
  describe: (endpoint) => `cluster via ${endpoint.nodes.join(", ")}`,
  startContainer: async () => {
    throw new Error(
      `no container runs a Redis Cluster reachable from outside it; set ${NODES}, or EXACTLY_SERVICES_PROVIDER=launcher`,
    );
  },
  launcher: async () => (await import("./launcher.ts")).redisClusterLauncher(redisCluster),
  probe: async (endpoint) => (await import("./probe.ts")).probeRedisCluster(endpoint),
};
