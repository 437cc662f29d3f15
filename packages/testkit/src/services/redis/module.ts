// Redis: a server that runs Lua scripts, for the Redis sinks. EXACTLY_REDIS_URL, else a redis
// container, else Debian's redis-server run by the local launcher.

import { envValue, redactUrl } from "../core/env.ts";
import type { ServiceModule } from "../core/service-module.ts";
import type { RedisEndpoint } from "./endpoint.ts";

const REDIS_URL = "EXACTLY_REDIS_URL";

export const redis: ServiceModule<RedisEndpoint, "redis"> = {
  name: "redis",
  envHint: REDIS_URL,
  fromEnv(env) {
    const url = envValue(env, REDIS_URL);
    return url === undefined ? undefined : { url };
  },
  toEnv: (endpoint) => ({ [REDIS_URL]: endpoint.url }),
  describe: (endpoint) => redactUrl(endpoint.url),
  startContainer: async () => (await import("./container.ts")).startRedisContainer(),
  launcher: async () => (await import("./launcher.ts")).redisLauncher(redis),
  probe: async (endpoint) => (await import("./probe.ts")).probeRedis(endpoint),
  restart: { label: "Redis", commandVariable: "EXACTLY_REDIS_RESTART_COMMAND", timeoutMs: 60_000 },
};
