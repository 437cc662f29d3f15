// Step 2 for Redis: the official image as it comes.

import { RedisContainer } from "@testcontainers/redis";
import { serviceContainer } from "../core/container.ts";
import type { ServiceContainer } from "../core/service-module.ts";
import type { RedisEndpoint } from "./endpoint.ts";

const REDIS_IMAGE = "redis:7.4-alpine";

export async function startRedisContainer(): Promise<ServiceContainer<RedisEndpoint>> {
  const container = await new RedisContainer(REDIS_IMAGE).start();
  return serviceContainer(container, { url: container.getConnectionUrl() });
}
