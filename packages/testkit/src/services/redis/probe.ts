// Redis is healthy when it answers PING; `status` shows the version it reports.

import { Redis } from "ioredis";
import type { RedisEndpoint } from "./endpoint.ts";

export async function probeRedis(endpoint: RedisEndpoint): Promise<string> {
  const redis = new Redis(endpoint.url, {
    lazyConnect: true,
    connectTimeout: 3_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  // Failures reach us as rejected commands; without a listener ioredis also prints them.
  redis.on("error", () => undefined);
  try {
    await redis.connect();
    const pong = await redis.ping();
    if (pong !== "PONG") throw new Error(`PING answered ${pong}`);
    const info = await redis.info("server");
    const version = /redis_version:(\S+)/.exec(info)?.[1] ?? "unknown";
    return `Redis ${version}`;
  } finally {
    redis.disconnect();
  }
}
