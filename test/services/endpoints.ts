// What tests call to reach the services that global setup resolved. Every helper throws an Error
// that names what is missing when its service is unavailable: a test that needs a service fails,
// it never skips.

import { inject } from "vitest";
import { PROVIDED_KEY, type ProvidedServices, type ServiceSource } from "./provided.ts";
import { ENV, type Endpoints, redactUrl, type ServiceName } from "./service-env.ts";

interface Resolved<S extends ServiceName> {
  source: ServiceSource;
  endpoint: Endpoints[S];
  containerId?: string;
}

function resolved<S extends ServiceName>(service: S): Resolved<S> {
  const services = inject(PROVIDED_KEY) as ProvidedServices | undefined;
  if (!services) {
    throw new Error(
      `no ${service} endpoint: test/services/global-setup.ts did not run; add it to vitest's globalSetup`,
    );
  }
  const entry = services[service];
  if (!entry.ok) throw new Error(`no ${service} endpoint: ${entry.error}`);
  return entry as Resolved<S>;
}

/** Kafka bootstrap servers, e.g. ["127.0.0.1:59092"]. */
export function kafkaBrokers(): string[] {
  return resolved("kafka").endpoint.brokers;
}

/** A connection string for a database the tests may create tables in. */
export function pgUrl(): string {
  return resolved("postgres").endpoint.url;
}

export function redisUrl(): string {
  return resolved("redis").endpoint.url;
}

export interface S3Config {
  endpoint: string;
  region: string;
  forcePathStyle: boolean;
  credentials: { accessKeyId: string; secretAccessKey: string };
}

/** Options for `new S3Client(...)` from @aws-sdk/client-s3. */
export function s3Config(): S3Config {
  const { endpoint, region, forcePathStyle, accessKeyId, secretAccessKey } = resolved("s3").endpoint;
  return { endpoint, region, forcePathStyle, credentials: { accessKeyId, secretAccessKey } };
}

/** Where a service's endpoint came from: environment variable, container or local launcher. */
export function serviceSource(service: ServiceName): ServiceSource {
  return resolved(service).source;
}

/**
 * Restarts the Kafka broker behind `kafkaBrokers()` and waits until transactions commit
 * again. Like {@link restartPostgres}, only a broker this project controls: a container, or
 * the local launcher's own broker; otherwise EXACTLY_KAFKA_RESTART_COMMAND, else it throws.
 */
export async function restartKafka(): Promise<void> {
  const { source, endpoint, containerId } = resolved("kafka");
  const { probe } = await import("./probes.ts");
  const { waitFor } = await import("./core/wait.ts");
  const waitUntilUp = () => waitFor("Kafka after restart", () => probe("kafka", endpoint), { timeoutMs: 180_000 });
  if (source === "container" && containerId) {
    const { restartContainer } = await import("./containers.ts");
    await restartContainer(containerId);
    await waitUntilUp();
    return;
  }
  const { launcherOwnsKafka, restartLauncherKafka } = await import("./kafka.ts");
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
  const { source, endpoint, containerId } = resolved("postgres");
  const { probePostgres } = await import("./probes.ts");
  const { waitFor } = await import("./core/wait.ts");
  const waitUntilUp = () => waitFor("PostgreSQL after restart", () => probePostgres(endpoint), { timeoutMs: 120_000 });

  if (source === "container" && containerId) {
    const { restartContainer } = await import("./containers.ts");
    await restartContainer(containerId);
    await waitUntilUp();
    return;
  }
  const { launcherOwnsPostgres, restartLauncherPostgres } = await import("./postgres.ts");
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
    `cannot restart PostgreSQL at ${redactUrl(endpoint.url)} (from ${source === "env" ? ENV.pgUrl : source}): ` +
      "the local launcher did not start it (no live server of its own on that port) and no container runs it; " +
      "set EXACTLY_PG_RESTART_COMMAND to a shell command that restarts that server",
  );
}
