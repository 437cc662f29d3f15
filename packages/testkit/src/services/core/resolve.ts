// Finding an endpoint for each service, in the order docs/design.md §7 gives:
//   1. an endpoint given by environment variable (CI sets them from `pnpm services env`);
//   2. else a container through testcontainers, if a container runtime answers;
//   3. else the local launcher, which installs what is missing and starts the server.
// Containers and launchers are only loaded when some service has no endpoint in the
// environment, so with every variable set this costs nothing and starts nothing.
//
// EXACTLY_SERVICES=kafka,postgres resolves only those (or "none"); the others are then reported
// as missing to any test that asks for them. EXACTLY_SERVICES_PROVIDER=container|launcher skips
// the other of steps 2 and 3. EXACTLY_SERVICES_KEEP=1 leaves servers this run started running.

import type { ServiceModule, ServiceSource } from "./service-module.ts";
import { errorMessage } from "./wait.ts";

/**
 * What global setup hands to test workers through vitest's provide/inject, by service name.
 * Values cross a process boundary, so they are plain data.
 */
export type ProvidedService<E = unknown> = ({ ok: true } & Resolved<E>) | { ok: false; error: string };

/** A service's endpoint and where it came from (a container also by id, to restart it). */
export interface Resolved<E> {
  source: ServiceSource;
  endpoint: E;
  containerId?: string;
}

export type ProvidedServices = Record<string, ProvidedService>;

export const PROVIDED_KEY = "exactlyServices";

declare module "vitest" {
  export interface ProvidedContext {
    exactlyServices: ProvidedServices;
  }
}

export interface Resolution {
  provided: ProvidedServices;
  /** Stops the containers, and the launcher servers, that this resolution started. */
  release(): Promise<void>;
}

type Log = (line: string) => void;
type Cleanups = Array<() => Promise<void>>;

function wantedServices(modules: readonly ServiceModule[]): ServiceModule[] {
  const value = process.env.EXACTLY_SERVICES?.trim();
  if (!value) return [...modules];
  if (value === "none") return [];
  return value.split(",").map((name) => {
    const trimmed = name.trim();
    const module = modules.find((m) => m.name === trimmed);
    if (!module) {
      const known = modules.map((m) => m.name).join(", ");
      throw new Error(`EXACTLY_SERVICES names an unknown service "${trimmed}" (known: ${known})`);
    }
    return module;
  });
}

function provider(): "container" | "launcher" | undefined {
  const value = process.env.EXACTLY_SERVICES_PROVIDER?.trim();
  if (!value) return undefined;
  if (value === "container" || value === "launcher") return value;
  throw new Error(`EXACTLY_SERVICES_PROVIDER must be "container" or "launcher", not "${value}"`);
}

export async function resolveServices(modules: readonly ServiceModule[], log: Log): Promise<Resolution> {
  const wanted = wantedServices(modules);
  const provided: ProvidedServices = {};
  const cleanups: Cleanups = [];
  const missing: ServiceModule[] = [];

  for (const module of modules) {
    const { name } = module;
    if (!wanted.includes(module)) {
      provided[name] = {
        ok: false,
        error: `${name} was not resolved because EXACTLY_SERVICES=${process.env.EXACTLY_SERVICES}; set ${module.envHint} or include ${name}`,
      };
      continue;
    }
    try {
      const endpoint = module.fromEnv(process.env);
      if (endpoint) {
        provided[name] = { ok: true, source: "env", endpoint };
        log(`${name}: ${module.describe(endpoint)} (from environment)`);
      } else {
        missing.push(module);
      }
    } catch (error) {
      provided[name] = { ok: false, error: errorMessage(error) };
    }
  }

  if (missing.length > 0) {
    const mode = provider();
    const { containerRuntimeAvailable } = await import("./container.ts");
    if (mode !== "launcher" && (await containerRuntimeAvailable())) {
      await Promise.all(missing.map((module) => fromContainer(module, provided, cleanups, log)));
    } else if (mode === "container") {
      for (const module of missing) {
        provided[module.name] = {
          ok: false,
          error: `EXACTLY_SERVICES_PROVIDER=container but no container runtime answers; set ${module.envHint} instead`,
        };
      }
    } else {
      await fromLaunchers(missing, provided, cleanups, log);
    }
  }

  return {
    provided,
    release: async () => {
      const results = await Promise.allSettled(cleanups.map((cleanup) => cleanup()));
      for (const result of results) {
        if (result.status === "rejected") log(`cleanup failed: ${errorMessage(result.reason)}`);
      }
    },
  };
}

async function fromContainer(
  module: ServiceModule,
  provided: ProvidedServices,
  cleanups: Cleanups,
  log: Log,
): Promise<void> {
  const { name } = module;
  log(`${name}: starting a container`);
  try {
    const container = await module.startContainer();
    cleanups.push(container.stop);
    provided[name] = {
      ok: true,
      source: "container",
      endpoint: container.endpoint,
      containerId: container.containerId,
    };
    log(`${name}: ${module.describe(container.endpoint)} (container)`);
  } catch (error) {
    provided[name] = { ok: false, error: `${name} container failed to start: ${errorMessage(error)}` };
  }
}

async function fromLaunchers(
  modules: ServiceModule[],
  provided: ProvidedServices,
  cleanups: Cleanups,
  log: Log,
): Promise<void> {
  const { loadLauncher } = await import("./launcher.ts");
  const { ensureBaseDirs, logFile } = await import("./paths.ts");
  ensureBaseDirs();
  const keep = process.env.EXACTLY_SERVICES_KEEP === "1";
  await Promise.all(
    modules.map(async (module) => {
      const { name } = module;
      try {
        const launcher = await loadLauncher(module);
        const result = await launcher.up((message) => log(`${name}: ${message}`));
        provided[name] = { ok: true, source: "launcher", endpoint: result.endpoint };
        log(`${name}: ${module.describe(result.endpoint)} (local launcher)`);
        // Leave the machine as we found it: stop what this run started, keep what was running.
        if (result.started && !keep) cleanups.push(async () => void (await launcher.down(() => undefined)));
      } catch (error) {
        provided[name] = {
          ok: false,
          error: `${name} local launcher failed: ${errorMessage(error)} (log: ${logFile(name)})`,
        };
      }
    }),
  );
  if (!keep && cleanups.length > 0) {
    log("servers started for this run stop when it ends; `pnpm services up` keeps them running between runs");
  }
}
