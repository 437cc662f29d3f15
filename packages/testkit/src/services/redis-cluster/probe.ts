// A Redis Cluster is healthy when every slot is served (cluster_state:ok) and keys of different
// slots can be written and read through it; `status` shows the number of masters.

import { Cluster } from "ioredis";
import type { RedisClusterEndpoint } from "./endpoint.ts";

export function clusterNodes(endpoint: RedisClusterEndpoint): { host: string; port: number }[] {
  return endpoint.nodes.map((node) => {
    const at = node.lastIndexOf(":");
    return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
  });
}

export async function probeRedisCluster(endpoint: RedisClusterEndpoint): Promise<string> {
  const cluster = new Cluster(clusterNodes(endpoint), {
    lazyConnect: true,
    enableOfflineQueue: true,
    clusterRetryStrategy: () => null,
    redisOptions: { connectTimeout: 3_000, maxRetriesPerRequest: 0 },
  });
  cluster.on("error", () => undefined);
  try {
    await cluster.connect();
    const info = String(await cluster.cluster("INFO"));
    if (!/cluster_state:ok/.test(info)) throw new Error(`cluster_state is not ok: ${info.split("\r\n")[0]}`);
    // Three keys, three slots (most likely three masters): each written and read back.
    const probe = `exactly-probe:${process.pid}`;
    for (const suffix of ["a", "b", "c"]) {
      await cluster.set(`${probe}:${suffix}`, suffix, "PX", 10_000);
      if ((await cluster.get(`${probe}:${suffix}`)) !== suffix)
        throw new Error(`a write to ${probe}:${suffix} did not read back`);
    }
    const masters = cluster.nodes("master").length;
    const version = /redis_version:(\S+)/.exec(String(await cluster.nodes("master")[0]?.info("server")))?.[1];
    return `Redis Cluster ${version ?? "?"}, ${masters} masters`;
  } finally {
    cluster.disconnect();
  }
}
