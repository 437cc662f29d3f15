// Postgres: a server that allows prepared transactions, for the two-phase-commit sink.
// EXACTLY_PG_URL, else a postgres container, else Debian's packages run by the local launcher.

import { envValue, redactUrl } from "../core/env.ts";
import type { ServiceModule } from "../core/service-module.ts";
import type { PostgresEndpoint } from "./endpoint.ts";

const PG_URL = "EXACTLY_PG_URL";

export const postgres: ServiceModule<PostgresEndpoint, "postgres"> = {
  name: "postgres",
  envHint: PG_URL,
  fromEnv(env) {
    const url = envValue(env, PG_URL);
    return url === undefined ? undefined : { url };
  },
  toEnv: (endpoint) => ({ [PG_URL]: endpoint.url }),
  describe: (endpoint) => redactUrl(endpoint.url),
  startContainer: async () => (await import("./container.ts")).startPostgresContainer(),
  launcher: async () => (await import("./launcher.ts")).postgresLauncher(postgres),
  probe: async (endpoint) => (await import("./probe.ts")).probePostgres(endpoint),
  restart: { label: "PostgreSQL", commandVariable: "EXACTLY_PG_RESTART_COMMAND", timeoutMs: 120_000 },
};
