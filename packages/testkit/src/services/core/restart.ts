// Restarting a service's server from a test (a broker or database restart mid-run), for the
// services whose module has a `restart` spec.
//
// Only a server this project controls is restarted, never one that merely answers on the endpoint:
// - from a container: the container is restarted (its host port is fixed, so the endpoint holds);
// - from the local launcher, or from the environment when that endpoint is the launcher's own
//   server (CI's case: `pnpm services up`, then the env lines): restarted through the launcher,
//   which checks that its pid file names a live server of its own;
// - any other server: the spec's command variable (EXACTLY_PG_RESTART_COMMAND...), a shell
//   command that restarts it, if set.
// Otherwise this throws, naming what is missing.

import { execFileSync } from "node:child_process";
import { restartContainer } from "./container.ts";
import type { Resolved } from "./resolve.ts";
import type { CrashOptions, ServiceModule } from "./service-module.ts";
import { waitFor } from "./wait.ts";

/**
 * SIGKILLs the service's server and starts it again on the same data (a crash, not a clean
 * restart). Only the local launcher's own server: a container or another server is refused.
 */
export async function crashService<E>(
  module: ServiceModule<E>,
  resolved: Resolved<E>,
  options: CrashOptions = {},
): Promise<void> {
  const launcher = await module.launcher();
  if (!launcher.crash || !launcher.owns?.(resolved.endpoint)) {
    throw new Error(
      `cannot SIGKILL ${module.name} at ${module.describe(resolved.endpoint)} (from ${resolved.source === "env" ? module.envHint : resolved.source}): ` +
        "only a server the local launcher started and still runs can be crashed by a test",
    );
  }
  await launcher.crash(options);
}

export async function restartService<E>(module: ServiceModule<E>, resolved: Resolved<E>): Promise<void> {
  const spec = module.restart;
  if (!spec) throw new Error(`${module.name} has no restart: no test is expected to restart it`);
  const { source, endpoint, containerId } = resolved;
  const waitUntilUp = () =>
    waitFor(`${spec.label} after restart`, () => module.probe(endpoint), { timeoutMs: spec.timeoutMs });

  if (source === "container" && containerId) {
    await restartContainer(containerId);
    await waitUntilUp();
    return;
  }
  const launcher = await module.launcher();
  if (launcher.restart && launcher.owns?.(endpoint)) {
    await launcher.restart();
    return;
  }
  const command = process.env[spec.commandVariable]?.trim();
  if (command) {
    execFileSync("sh", ["-c", command], { stdio: "inherit", timeout: spec.timeoutMs });
    await waitUntilUp();
    return;
  }
  throw new Error(
    `cannot restart ${spec.label} at ${module.describe(endpoint)} (from ${source === "env" ? module.envHint : source}): ` +
      "the local launcher did not start it (no live server of its own on that port) and no container runs it; " +
      `set ${spec.commandVariable} to a shell command that restarts that server`,
  );
}
