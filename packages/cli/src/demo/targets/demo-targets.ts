import type { DemoSinkName } from "../demo-options.ts";
import type { DemoTarget } from "./demo-target.ts";
import { fileTarget } from "./file-target.ts";
import { postgresTarget } from "./postgres-target.ts";
import { redisTarget } from "./redis-target.ts";
import { s3Target } from "./s3-target.ts";

/**
 * Every target, by its `--sink` value. Each target is handed back only the settings it made
 * itself, so the registry can forget their types.
 */
export const DEMO_TARGETS: Readonly<Record<DemoSinkName, DemoTarget<object>>> = {
  file: fileTarget,
  postgres: postgresTarget,
  redis: redisTarget,
  s3: s3Target,
};
