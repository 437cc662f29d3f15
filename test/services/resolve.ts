// Finding an endpoint for each service, in the order DESIGN.md §6 gives:
//   1. an endpoint given by environment variable (CI sets them from `pnpm services env`);
//   2. else a container through testcontainers, if a container runtime answers;
//   3. else the local launcher, which installs what is missing and starts the server.
// Containers and launchers are only loaded when some service has no endpoint in the
// environment, so with every variable set this costs nothing and starts nothing.
//
// EXACTLY_SERVICES=kafka,postgres resolves only those (or "none"); the others are then reported
// as missing to any test that asks for them. EXACTLY_SERVICES_PROVIDER=container|launcher skips
// the other of steps 2 and 3. EXACTLY_SERVICES_KEEP=1 leaves servers this run started running.

import { errorMessage } from "./core/wait.ts";
import type { ProvidedService, ProvidedServices } from "./provided.ts";
import {
  describeEndpoint,
  ENV_HINT,
  endpointFromEnv,
  isServiceName,
  SERVICE_NAMES,
  type ServiceName,
} from "./service-env.ts";

export interface Resolution {
  provided: ProvidedServices;
  /** Stops the containers, and the launcher servers, that this resolution started. */
  release(): Promise<void>;
}

type Log = (line: string) => void;

function wantedServices(): ServiceName[] {
  const value = process.env.EXACTLY_SERVICES?.trim();
  if (!value) return [...SERVICE_NAMES];
  if (value === "none") return [];
  return value.split(",").map((name) => {
    const trimmed = name.trim();
    if (!isServiceName(trimmed)) {
      throw new Error(`EXACTLY_SERVICES names an unknown service "${trimmed}" (known: ${SERVICE_NAMES.join(", ")})`);
    }
    return trimmed;
  });
}

function provider(): "container" | "launcher" | undefined {
  const value = process.env.EXACTLY_SERVICES_PROVIDER?.trim();
  if (!value) return undefined;
  if (value === "container" || value === "launcher") return value;
  throw new Error(`EXACTLY_SERVICES_PROVIDER must be "container" or "launcher", not "${value}"`);
}

export async function resolveServices(log: Log): Promise<Resolution> {
  const wanted = wantedServices();
  const provided = {} as Record<ServiceName, ProvidedService<ServiceName>>;
  const cleanups: Array<() => Promise<void>> = [];
  const missing: ServiceName[] = [];

  for (const service of SERVICE_NAMES) {
    if (!wanted.includes(service)) {
      provided[service] = {
        ok: false,
        error: `${service} was not resolved because EXACTLY_SERVICES=${process.env.EXACTLY_SERVICES}; set ${ENV_HINT[service]} or include ${service}`,
      };
      continue;
    }
    try {
      const endpoint = endpointFromEnv(service);
      if (endpoint) {
        provided[service] = { ok: true, source: "env", endpoint };
        log(`${service}: ${describeEndpoint(service, endpoint)} (from environment)`);
      } else {
        missing.push(service);
      }
    } catch (error) {
      provided[service] = { ok: false, error: errorMessage(error) };
    }
  }

  if (missing.length > 0) {
    const mode = provider();
    const { containerRuntimeAvailable } = await import("./containers.ts");
    if (mode !== "launcher" && (await containerRuntimeAvailable())) {
      await resolveWithContainers(missing, provided, cleanups, log);
    } else if (mode === "container") {
      for (const service of missing) {
        provided[service] = {
          ok: false,
          error: `EXACTLY_SERVICES_PROVIDER=container but no container runtime answers; set ${ENV_HINT[service]} instead`,
        };
      }
    } else {
      await resolveWithLaunchers(missing, provided, cleanups, log);
    }
  }

  return {
    provided: provided as ProvidedServices,
    release: async () => {
      const results = await Promise.allSettled(cleanups.map((cleanup) => cleanup()));
      for (const result of results) {
        if (result.status === "rejected") log(`cleanup failed: ${errorMessage(result.reason)}`);
      }
    },
  };
}

async function resolveWithContainers(
  services: ServiceName[],
  provided: Record<ServiceName, ProvidedService<ServiceName>>,
  cleanups: Array<() => Promise<void>>,
  log: Log,
): Promise<void> {
  const { startContainer } = await import("./containers.ts");
  await Promise.all(
    services.map(async (service) => {
      log(`${service}: starting a container`);
      try {
        const container = await startContainer(service);
        cleanups.push(container.stop);
        provided[service] = {
          ok: true,
          source: "container",
          endpoint: container.endpoint,
          containerId: container.containerId,
        };
        log(`${service}: ${describeEndpoint(service, container.endpoint)} (container)`);
      } catch (error) {
        provided[service] = { ok: false, error: `${service} container failed to start: ${errorMessage(error)}` };
      }
    }),
  );
}

async function resolveWithLaunchers(
  services: ServiceName[],
  provided: Record<ServiceName, ProvidedService<ServiceName>>,
  cleanups: Array<() => Promise<void>>,
  log: Log,
): Promise<void> {
  const { launchers } = await import("./launchers.ts");
  const { ensureBaseDirs, logFile } = await import("./core/paths.ts");
  ensureBaseDirs();
  const keep = process.env.EXACTLY_SERVICES_KEEP === "1";
  await Promise.all(
    services.map(async (service) => {
      const launcher = launchers[service];
      try {
        const result = await launcher.up((message) => log(`${service}: ${message}`));
        provided[service] = { ok: true, source: "launcher", endpoint: result.endpoint };
        log(`${service}: ${describeEndpoint(service, result.endpoint)} (local launcher)`);
        // Leave the machine as we found it: stop what this run started, keep what was running.
        if (result.started && !keep) cleanups.push(async () => void (await launcher.down(() => undefined)));
      } catch (error) {
        provided[service] = {
          ok: false,
          error: `${service} local launcher failed: ${errorMessage(error)} (log: ${logFile(service)})`,
        };
      }
    }),
  );
  if (!keep && cleanups.length > 0) {
    log("servers started for this run stop when it ends; `pnpm services up` keeps them running between runs");
  }
}
