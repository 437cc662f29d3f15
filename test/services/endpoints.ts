// What tests call to reach the services that global setup resolved. Every helper throws an Error
// that names what is missing when its service is unavailable: a test that needs a service fails,
// it never skips.

import { inject } from "vitest";
import { redactUrl } from "./core/env.ts";
import { PROVIDED_KEY, type ProvidedServices } from "./core/resolve.ts";
import type { ServiceModule, ServiceSource } from "./core/service-module.ts";
import { kafka } from "./kafka/module.ts";
import { SERVICES, type ServiceName } from "./modules.ts";
import { PG_URL, postgres } from "./postgres/module.ts";
import { redis } from "./redis/module.ts";
import { s3 } from "./s3/module.ts";

interface Resolved<E> {
  source: ServiceSource;
  endpoint: E;
  containerId?: string;
}

function resolved<E>(module: ServiceModule<E>): Resolved<E> {
  const entry = (inject(PROVIDED_KEY) as ProvidedServices | undefined)?.[module.name];
  if (!entry) {
    throw new Error(
      `no ${module.name} endpoint: test/services/global-setup.ts did not run; add it to vitest's globalSetup`,
    );
  }
  if (!entry.ok) throw new Error(`no ${module.name} endpoint: ${entry.error}`);
  return entry as Resolved<E>;
}

/** Kafka bootstrap servers, e.g. ["127.0.0.1:59092"]. */
export function kafkaBrokers(): string[] {
  return resolved(kafka).endpoint.brokers;
}

/** A connection string for a database the tests may create tables in. */
export function pgUrl(): string {
  return resolved(postgres).endpoint.url;
}

export function redisUrl(): string {
  return resolved(redis).endpoint.url;
}

export interface S3Config {
  endpoint: string;
  region: string;
  forcePathStyle: boolean;
  credentials: { accessKeyId: string; secretAccessKey: string };
}

/** Options for `new S3Client(...)` from @aws-sdk/client-s3. */
export function s3Config(): S3Config {
  const { endpoint, region, forcePathStyle, accessKeyId, secretAccessKey } = resolved(s3).endpoint;
  return { endpoint, region, forcePathStyle, credentials: { accessKeyId, secretAccessKey } };
}

/** Where a service's endpoint came from: environment variable, container or local launcher. */
export function serviceSource(service: ServiceName): ServiceSource {
  return resolved(SERVICES.find((m) => m.name === service) as ServiceModule).source;
}

/**
 * Restarts the Kafka broker behind `kafkaBrokers()` and waits until transactions commit
 * again. Like {@link restartPostgres}, only a broker this project controls: a container, or
 * the local launcher's own broker; otherwise EXACTLY_KAFKA_RESTART_COMMAND, else it throws.
 */
export async function restartKafka(): Promise<void> {
  const { source, endpoint, containerId } = resolved(kafka);
  const { waitFor } = await import("./core/wait.ts");
  const waitUntilUp = () => waitFor("Kafka after restart", () => kafka.probe(endpoint), { timeoutMs: 180_000 });
  if (source === "container" && containerId) {
    const { restartContainer } = await import("./core/container.ts");
    await restartContainer(containerId);
    await waitUntilUp();
    return;
  }
  const { launcherOwnsKafka, restartLauncherKafka } = await import("./kafka/launcher.ts");
  if (launcherOwnsKafka(endpoint.brokers)) {
    await restartLauncherKafka();
    return;
  }
  const command = process.env.EXACTLY_KAFKA_RESTART_COMMAND?.trim();
  if (command) {
    const { execFileSync } = await import("node:child_process");
    execFileSync("sh", ["-c", command], { stdio: "inherit", timeout: 180_000 });
    await waitUntilUp();
    return;
  }
  throw new Error(
    `cannot restart the Kafka broker at ${endpoint.brokers.join(",")}: the local launcher did not start it and no ` +
      "container runs it; set EXACTLY_KAFKA_RESTART_COMMAND to a shell command that restarts it",
  );
}

/**
 * Restarts the PostgreSQL server behind `pgUrl()` and waits until it accepts connections again.
 *
 * Only a server this project controls is restarted, never one that merely answers on the URL:
 * - from a container: the container is restarted (its host port is fixed, so the URL holds);
 * - from the local launcher, or from EXACTLY_PG_URL when that URL is the launcher's own server
 *   (CI's case: `pnpm services up`, then the env lines): restarted through the launcher, which
 *   checks its pid file names a live postmaster of its own data directory;
 * - any other server: EXACTLY_PG_RESTART_COMMAND, a shell command that restarts it, if set.
 * Otherwise this throws, naming what is missing.
 *
 * A restart ends every session on the server, including other test files' sessions if they run
 * at the same time: callers should be few and tolerant.
 */
export async function restartPostgres(): Promise<void> {
  const { source, endpoint, containerId } = resolved(postgres);
  const { waitFor } = await import("./core/wait.ts");
  const waitUntilUp = () => waitFor("PostgreSQL after restart", () => postgres.probe(endpoint), { timeoutMs: 120_000 });

  if (source === "container" && containerId) {
    const { restartContainer } = await import("./core/container.ts");
    await restartContainer(containerId);
    await waitUntilUp();
    return;
  }
  const { launcherOwnsPostgres, restartLauncherPostgres } = await import("./postgres/launcher.ts");
  if (launcherOwnsPostgres(endpoint.url)) {
    await restartLauncherPostgres();
    return;
  }
  const command = process.env.EXACTLY_PG_RESTART_COMMAND?.trim();
  if (command) {
    const { execFileSync } = await import("node:child_process");
    execFileSync("sh", ["-c", command], { stdio: "inherit", timeout: 120_000 });
    await waitUntilUp();
    return;
  }
  throw new Error(
    `cannot restart PostgreSQL at ${redactUrl(endpoint.url)} (from ${source === "env" ? PG_URL : source}): ` +
      "the local launcher did not start it (no live server of its own on that port) and no container runs it; " +
      "set EXACTLY_PG_RESTART_COMMAND to a shell command that restarts that server",
  );
}
