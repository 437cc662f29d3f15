// Where the local launchers keep things.
//
// Two places on purpose: CI runs every build in a fresh clone, so anything slow to obtain
// (Kafka jars, the MinIO binary, the moto virtualenv) lives in a machine-wide cache that
// survives the clone, while everything that belongs to one running set of services
// (data directories, pid files, logs) lives in the clone's own gitignored `.services/`.

import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

// Five levels up from packages/testkit/src/services/core/.
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../..");

/** Runtime state of this clone's services: data, pid files, logs. */
export const stateDir = process.env.EXACTLY_SERVICES_STATE ?? join(repoRoot, ".services");

/** Downloaded and built tools, shared by every clone on the machine. */
export const cacheDir =
  process.env.EXACTLY_SERVICES_CACHE ??
  (process.getuid?.() === 0 ? "/var/cache/exactly-services" : join(homedir(), ".cache", "exactly-services"));

export const logsDir = join(stateDir, "logs");
export const pidsDir = join(stateDir, "pids");

export function logFile(service: string): string {
  return join(logsDir, `${service}.log`);
}

export function pidFile(service: string): string {
  return join(pidsDir, `${service}.pid`);
}

/** Held while a process starts or stops the service. */
export function lockFile(service: string): string {
  return join(stateDir, "locks", `${service}.lock`);
}

/** A directory under the state dir, created on first use. */
export function serviceDir(service: string): string {
  const dir = join(stateDir, service);
  mkdirSync(dir, { recursive: true });
  return dir;
}

export function ensureBaseDirs(): void {
  mkdirSync(logsDir, { recursive: true });
  mkdirSync(pidsDir, { recursive: true });
}
