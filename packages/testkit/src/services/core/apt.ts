// Installing Debian packages for the launchers (as root). Everything checks first and installs
// only what is missing; what each service needs from apt is in its own launcher.

import { existsSync, rmSync, writeFileSync } from "node:fs";
import { capture, type Progress, run, which } from "./proc.ts";

const APT_ENV = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };

// apt-get holds a machine-wide lock, so the launchers' installs queue behind each other instead
// of racing; and the package lists are refreshed at most once per process.
let aptQueue: Promise<unknown> = Promise.resolve();
let aptListsFresh = false;

async function debInstalled(pkg: string): Promise<boolean> {
  const result = await capture("dpkg-query", ["--status", pkg]);
  return result.code === 0 && /^Status: install ok installed$/m.test(result.stdout);
}

/** Installs the Debian packages that are not installed yet. */
export function aptInstall(packages: string[], log: string, progress: Progress): Promise<void> {
  const job = aptQueue.then(() => installMissing(packages, log, progress));
  aptQueue = job.catch(() => undefined);
  return job;
}

/**
 * The executable `tool` on PATH if one is `usable`, installing `packages` first when none is;
 * undefined if there is still none afterwards (the caller says what it needed).
 */
export async function aptTool(
  tool: string,
  packages: string[],
  usable: (path: string) => Promise<boolean>,
  log: string,
  progress: Progress,
): Promise<string | undefined> {
  let found = which(tool);
  if (!found || !(await usable(found))) {
    await aptInstall(packages, log, progress);
    found = which(tool);
  }
  return found && (await usable(found)) ? found : undefined;
}

async function installMissing(packages: string[], log: string, progress: Progress): Promise<void> {
  const missing: string[] = [];
  for (const pkg of packages) if (!(await debInstalled(pkg))) missing.push(pkg);
  if (missing.length === 0) return;
  const command = `apt-get install -y ${missing.join(" ")}`;
  if (!which("apt-get")) {
    throw new Error(`missing ${missing.join(", ")} and this is not a Debian system: install them yourself`);
  }
  if (process.getuid?.() !== 0) throw new Error(`missing ${missing.join(", ")}: run \`sudo ${command}\``);
  progress(`installing ${missing.join(", ")} with apt-get`);
  const options = { log, env: APT_ENV, progress, heartbeat: `still installing ${missing.join(", ")}` };
  if (!aptListsFresh) {
    await run("apt-get", ["update"], options);
    aptListsFresh = true;
  }
  await withoutServiceAutostart(() =>
    run("apt-get", ["install", "-y", "--no-install-recommends", ...missing], options),
  );
}

/**
 * Debian packages of servers start a default instance on install (Redis on 6379, a Postgres
 * "main" cluster on 5432). We start our own on other ports, so a stray system instance would only
 * be a process nobody asked for; the standard policy-rc.d hook tells the package scripts not to
 * start anything while we install. An existing policy is left alone.
 */
async function withoutServiceAutostart<T>(install: () => Promise<T>): Promise<T> {
  const policy = "/usr/sbin/policy-rc.d";
  if (existsSync(policy)) return install();
  writeFileSync(policy, "#!/bin/sh\n# exactly test services: no service starts during apt-get install\nexit 101\n", {
    mode: 0o755,
  });
  try {
    return await install();
  } finally {
    rmSync(policy, { force: true });
  }
}
