// Step 2 for Postgres: the official image with prepared transactions enabled.

import { randomBytes } from "node:crypto";
import { PostgreSqlContainer } from "@testcontainers/postgresql";
import { serviceContainer } from "../core/container.ts";
import { freePort } from "../core/ports.ts";
import type { ServiceContainer } from "../core/service-module.ts";
import type { PostgresEndpoint } from "./endpoint.ts";

const POSTGRES_IMAGE = "postgres:17-alpine";

export async function startPostgresContainer(): Promise<ServiceContainer<PostgresEndpoint>> {
  // A fixed host port: the two-phase-commit smoke test restarts the container, and Docker may
  // map a random port differently after a restart, which would strand the URL tests were given.
  const hostPort = await freePort();
  const container = await new PostgreSqlContainer(POSTGRES_IMAGE)
    .withDatabase("exactly")
    .withUsername("postgres")
    .withPassword(randomBytes(12).toString("hex"))
    .withCommand(["postgres", "-c", "max_prepared_transactions=64"])
    .withExposedPorts({ container: 5432, host: hostPort })
    .start();
  return serviceContainer(container, { url: container.getConnectionUri() });
}
