// Every service the tests can ask for, in the order the CLI lists them. A new service is a
// folder with a module.ts and one line here.

import type { ServiceModule } from "./core/service-module.ts";
import { kafka } from "./kafka/module.ts";
import { postgres } from "./postgres/module.ts";
import { redis } from "./redis/module.ts";
import { redisCluster } from "./redis-cluster/module.ts";
import { s3 } from "./s3/module.ts";
import { s3Moto } from "./s3-moto/module.ts";

const modules = [kafka, postgres, redis, redisCluster, s3, s3Moto] as const;

export type ServiceName = (typeof modules)[number]["name"];

export const SERVICES: readonly ServiceModule[] = modules;

export function serviceNamed(name: string): ServiceModule | undefined {
  return SERVICES.find((module) => module.name === name);
}
