// The local launcher of each service, serialized across processes.

import { join } from "node:path";
import { stateDir } from "./core/paths.ts";
import { type Progress, withLock } from "./core/proc.ts";
import { kafkaLauncher } from "./kafka.ts";
import type { Launcher } from "./launcher.ts";
import { postgresLauncher } from "./postgres.ts";
import { redisLauncher } from "./redis.ts";
import { s3Launcher } from "./s3.ts";
import type { ServiceName } from "./service-env.ts";

/** One `up` or `down` per service at a time, across processes. */
function serialized<S extends ServiceName>(launcher: Launcher<S>): Launcher<S> {
  const lock = join(stateDir, "locks", `${launcher.service}.lock`);
  const waitNote = (progress: Progress) => (owner: number) =>
    progress(`waiting for process ${owner}, which is starting or stopping ${launcher.service}`);
  return {
    ...launcher,
    up: (progress) => withLock(lock, waitNote(progress), () => launcher.up(progress)),
    down: (progress) => withLock(lock, waitNote(progress), () => launcher.down(progress)),
  };
}

export const launchers: { [S in ServiceName]: Launcher<S> } = {
  kafka: serialized(kafkaLauncher),
  postgres: serialized(postgresLauncher),
  redis: serialized(redisLauncher),
  s3: serialized(s3Launcher),
};
