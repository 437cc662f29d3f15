// The container path: each service in a throwaway container through testcontainers, used when
// no endpoint is given by environment variable and a container runtime answers. testcontainers
// is imported lazily so that machines without Docker never load it.

import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { withTimeout } from "./core/wait.ts";
import type { Endpoints, ServiceName } from "./service-env.ts";

export const CONTAINER_IMAGES: { [S in ServiceName]: string } = {
  // Confluent Platform 8.0 is Apache Kafka 4.0; tags >= 8 run in KRaft mode.
  kafka: "confluentinc/cp-kafka:8.0.0",
  postgres: "postgres:17-alpine",
  redis: "redis:7.4-alpine",
  s3: "minio/minio:RELEASE.2025-09-07T16-13-09Z",
};

export interface ServiceContainer<S extends ServiceName> {
  endpoint: Endpoints[S];
  containerId: string;
  stop(): Promise<void>;
}

/**
 * True if a container runtime answers. Bounded in time: a DOCKER_HOST pointing at a machine
 * that does not answer must not hold up the test run.
 */
export async function containerRuntimeAvailable(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import("testcontainers");
    await withTimeout(getContainerRuntimeClient(), 10_000, "container runtime");
    return true;
  } catch {
    return false;
  }
}

/** A host port that is free right now (the kernel picks it). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address ? resolve(address.port) : reject()));
    });
  });
}

async function startKafka(): Promise<ServiceContainer<"kafka">> {
  const { KafkaContainer } = await import("@testcontainers/kafka");
  const container = await new KafkaContainer(CONTAINER_IMAGES.kafka)
    .withKraft()
    // The module sets the offsets topic and min ISR for one broker but not the replication of
    // the transaction state topic, which defaults to 3: every transaction would then wait for
    // replicas that do not exist.
    .withEnvironment({
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: "1",
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: "1",
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: "1",
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: "0",
    })
    .start();
  return {
    // 9093 is the module's listener advertised to the host.
    endpoint: { brokers: [`${container.getHost()}:${container.getMappedPort(9093)}`] },
    containerId: container.getId(),
    stop: async () => void (await container.stop()),
  };
}

async function startPostgres(): Promise<ServiceContainer<"postgres">> {
  const { PostgreSqlContainer } = await import("@testcontainers/postgresql");
  // A fixed host port: the two-phase-commit smoke test restarts the container, and Docker may
  // map a random port differently after a restart, which would strand the URL tests were given.
  const hostPort = await freePort();
  const container = await new PostgreSqlContainer(CONTAINER_IMAGES.postgres)
    .withDatabase("exactly")
    .withUsername("postgres")
    .withPassword(randomBytes(12).toString("hex"))
    .withCommand(["postgres", "-c", "max_prepared_transactions=64"])
    .withExposedPorts({ container: 5432, host: hostPort })
    .start();
  return {
    endpoint: { url: container.getConnectionUri() },
    containerId: container.getId(),
    stop: async () => void (await container.stop()),
  };
}

async function startRedis(): Promise<ServiceContainer<"redis">> {
  const { RedisContainer } = await import("@testcontainers/redis");
  const container = await new RedisContainer(CONTAINER_IMAGES.redis).start();
  return {
    endpoint: { url: container.getConnectionUrl() },
    containerId: container.getId(),
    stop: async () => void (await container.stop()),
  };
}

async function startS3(): Promise<ServiceContainer<"s3">> {
  const { MinioContainer } = await import("@testcontainers/minio");
  const accessKeyId = `exactly${randomBytes(6).toString("hex")}`;
  const secretAccessKey = randomBytes(24).toString("hex");
  const container = await new MinioContainer(CONTAINER_IMAGES.s3)
    .withUsername(accessKeyId)
    .withPassword(secretAccessKey)
    .start();
  return {
    endpoint: {
      endpoint: container.getConnectionUrl(),
      region: "us-east-1",
      accessKeyId,
      secretAccessKey,
      forcePathStyle: true,
    },
    containerId: container.getId(),
    stop: async () => void (await container.stop()),
  };
}

const starters: { [S in ServiceName]: () => Promise<ServiceContainer<S>> } = {
  kafka: startKafka,
  postgres: startPostgres,
  redis: startRedis,
  s3: startS3,
};

export function startContainer<S extends ServiceName>(service: S): Promise<ServiceContainer<S>> {
  return starters[service]();
}

/** Restarts a container by id (from a test worker, which does not hold the container object). */
export async function restartContainer(containerId: string): Promise<void> {
  const { getContainerRuntimeClient } = await import("testcontainers");
  const client = await getContainerRuntimeClient();
  await client.container.restart(client.container.getById(containerId), { timeout: 10 });
}
