// What tests call to reach the services that global setup resolved. Every helper throws an Error
// that names what is missing when its service is unavailable: a test that needs a service fails,
// it never skips.

import { inject } from "vitest";
import { PROVIDED_KEY, type ProvidedServices, type Resolved } from "./core/resolve.ts";
import { crashService, restartService } from "./core/restart.ts";
import type { CrashOptions, ServiceModule, ServiceSource } from "./core/service-module.ts";
import { kafka } from "./kafka/module.ts";
import { type ServiceName, serviceNamed } from "./modules.ts";
import { postgres } from "./postgres/module.ts";
import { redis } from "./redis/module.ts";
import { redisCluster } from "./redis-cluster/module.ts";
import { s3 } from "./s3/module.ts";
import { s3Moto } from "./s3-moto/module.ts";

function resolved<E>(module: ServiceModule<E>): Resolved<E> {
  const entry = (inject(PROVIDED_KEY) as ProvidedServices | undefined)?.[module.name];
  if (!entry) {
    throw new Error(
      `no ${module.name} endpoint: @exactly/testkit's services/global-setup.ts did not run; add it to vitest's globalSetup`,
    );
  }
  if (!entry.ok) throw new Error(`no ${module.name} endpoint: ${entry.error}`);
  return entry as Resolved<E>;
}

/** Kafka bootstrap servers, e.g. ["127.0.0.1:59092"]. */
export function kafkaBrokers(): string[] {
  return resolved(kafka).endpoint.brokers;
}

/**
 * The broker's proxied listener (see KafkaEndpoint): a test listens at `advertised` with its
 * TCP proxy to `upstream`. A broker without one (given by EXACTLY_KAFKA_BROKERS alone) fails
 * the test that asks: not checked.
 */
export function kafkaProxiedListener(): {
  advertised: { host: string; port: number };
  upstream: { host: string; port: number };
} {
  const proxied = resolved(kafka).endpoint.proxied;
  if (!proxied) {
    throw new Error(
      "not checked: the Kafka service has no proxied listener (EXACTLY_KAFKA_PROXIED_LISTENER=advertised->upstream)",
    );
  }
  const split = (address: string) => {
    const at = address.lastIndexOf(":");
    return { host: address.slice(0, at), port: Number(address.slice(at + 1)) };
  };
  return { advertised: split(proxied.advertised), upstream: split(proxied.upstream) };
}

/** The broker's SASL_PLAINTEXT listener with SCRAM-SHA-256; a broker without one fails the test that asks: not checked. */
export function kafkaScramBrokers(): string[] {
  const brokers = resolved(kafka).endpoint.scramBrokers;
  if (!brokers) {
    throw new Error("not checked: the Kafka service has no SCRAM listener (EXACTLY_KAFKA_SCRAM_BROKERS)");
  }
  return brokers;
}

/** A connection string for a database the tests may create tables in. */
export function pgUrl(): string {
  return resolved(postgres).endpoint.url;
}

export function redisUrl(): string {
  return resolved(redis).endpoint.url;
}

/**
 * Restarts the Redis server behind `redisUrl()` (SIGTERM, then start on the same append-only
 * file) and waits until it answers again. Only a server this project controls; else
 * EXACTLY_REDIS_RESTART_COMMAND, else it throws. Every connection to it ends: callers run alone.
 */
export async function restartRedis(): Promise<void> {
  await restartService(redis, resolved(redis));
}

/**
 * SIGKILLs the Redis server behind `redisUrl()` and starts it again on its append-only file
 * (fsynced on every write, so nothing acknowledged is lost). Only the local launcher's server.
 */
export async function crashRedis(options?: CrashOptions): Promise<void> {
  await crashService(redis, resolved(redis), options);
}

/** Nodes of a Redis Cluster of three masters, as ioredis' `Cluster` takes them. */
export function redisClusterNodes(): { host: string; port: number }[] {
  return resolved(redisCluster).endpoint.nodes.map((node) => {
    const at = node.lastIndexOf(":");
    return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
  });
}

export interface S3Config {
  endpoint: string;
  region: string;
  forcePathStyle: boolean;
  credentials: { accessKeyId: string; secretAccessKey: string };
}

function s3ConfigOf(module: typeof s3 | typeof s3Moto): S3Config {
  const { endpoint, region, forcePathStyle, accessKeyId, secretAccessKey } = resolved(module).endpoint;
  return { endpoint, region, forcePathStyle, credentials: { accessKeyId, secretAccessKey } };
}

/** Options for `new S3Client(...)` from @aws-sdk/client-s3: the main S3 server (MinIO). */
export function s3Config(): S3Config {
  return s3ConfigOf(s3);
}

/** The second S3 implementation (moto), which answers some calls differently from MinIO. */
export function s3MotoConfig(): S3Config {
  return s3ConfigOf(s3Moto);
}

/** Restarts the S3 server behind `s3Config()` (SIGTERM, start on the same data). Callers run alone. */
export async function restartS3(): Promise<void> {
  await restartService(s3, resolved(s3));
}

/** SIGKILLs the S3 server behind `s3Config()` and starts it again on its data directory. */
export async function crashS3(options?: CrashOptions): Promise<void> {
  await crashService(s3, resolved(s3), options);
}

/** Where a service's endpoint came from: environment variable, container or local launcher. */
export function serviceSource(service: ServiceName): ServiceSource {
  return resolved(serviceNamed(service) as ServiceModule).source;
}

/**
 * Restarts the Kafka broker behind `kafkaBrokers()` and waits until transactions commit again.
 * Only a broker this project controls (see core/restart.ts); else EXACTLY_KAFKA_RESTART_COMMAND,
 * else it throws.
 */
export async function restartKafka(): Promise<void> {
  await restartService(kafka, resolved(kafka));
}

/**
 * SIGKILLs the Kafka broker behind `kafkaBrokers()` (no controlled shutdown: the broker
 * recovers its logs on the next start), leaves it down `downMs`, starts it again and waits
 * until transactions commit. Only the local launcher's broker.
 */
export async function crashKafka(options?: CrashOptions): Promise<void> {
  await crashService(kafka, resolved(kafka), options);
}

/**
 * Restarts the PostgreSQL server behind `pgUrl()` and waits until it accepts connections again.
 * Only a server this project controls (see core/restart.ts); else EXACTLY_PG_RESTART_COMMAND,
 * else it throws.
 *
 * A restart ends every session on the server, including other test files' sessions if they run
 * at the same time: callers should be few and tolerant.
 */
export async function restartPostgres(): Promise<void> {
  await restartService(postgres, resolved(postgres));
}

/** SIGKILLs the PostgreSQL server behind `pgUrl()`, leaves it down `downMs`, and starts it again (crash recovery from its WAL). */
export async function crashPostgres(options?: CrashOptions): Promise<void> {
  await crashService(postgres, resolved(postgres), options);
}
