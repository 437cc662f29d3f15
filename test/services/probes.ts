// Health checks that exercise what the project needs from each service, not just an open port:
// Kafka must commit a transaction, Postgres must allow prepared transactions, Redis must answer,
// S3 must accept our credentials. `up` waits on them and `status` reports them.

import { ListBucketsCommand, S3Client } from "@aws-sdk/client-s3";
import { Redis } from "ioredis";
import kafkajs from "kafkajs";
import pg from "pg";
import type {
  Endpoints,
  KafkaEndpoint,
  PostgresEndpoint,
  RedisEndpoint,
  S3Endpoint,
  ServiceName,
} from "./service-env.ts";

const PROBE_TOPIC = "__exactly_services_probe";
// One fixed transactional id: each probe fences the previous one, so a probe killed halfway
// leaves no open transaction behind for longer than the next probe.
const PROBE_TRANSACTIONAL_ID = "exactly-services-probe";

/** Resolves with a short fact about the service if it is healthy, rejects with why not. */
export async function probeKafka(endpoint: KafkaEndpoint): Promise<string> {
  const kafka = new kafkajs.Kafka({
    clientId: "exactly-services-probe",
    brokers: endpoint.brokers,
    logLevel: kafkajs.logLevel.NOTHING,
    connectionTimeout: 3_000,
    retry: { retries: 3 },
  });
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({
      topics: [{ topic: PROBE_TOPIC, numPartitions: 1, replicationFactor: 1 }],
      waitForLeaders: true,
    });
  } finally {
    await admin.disconnect();
  }
  const producer = kafka.producer({
    transactionalId: PROBE_TRANSACTIONAL_ID,
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await producer.connect();
  try {
    const transaction = await producer.transaction();
    try {
      await transaction.send({ topic: PROBE_TOPIC, messages: [{ value: new Date().toISOString() }] });
      await transaction.commit();
    } catch (error) {
      await transaction.abort().catch(() => undefined);
      throw error;
    }
  } finally {
    await producer.disconnect();
  }
  return "transactional produce committed";
}

export async function probePostgres(endpoint: PostgresEndpoint): Promise<string> {
  const client = new pg.Client({ connectionString: endpoint.url, connectionTimeoutMillis: 3_000 });
  await client.connect();
  try {
    const result = await client.query<{ version: string; max: string }>(
      "SELECT current_setting('server_version') AS version, current_setting('max_prepared_transactions') AS max",
    );
    const row = result.rows[0];
    if (!row) throw new Error("no answer to a settings query");
    if (Number(row.max) <= 0) {
      throw new Error("max_prepared_transactions = 0: the server cannot PREPARE TRANSACTION");
    }
    return `PostgreSQL ${row.version}, max_prepared_transactions=${row.max}`;
  } finally {
    await client.end();
  }
}

export async function probeRedis(endpoint: RedisEndpoint): Promise<string> {
  const redis = new Redis(endpoint.url, {
    lazyConnect: true,
    connectTimeout: 3_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  // Failures reach us as rejected commands; without a listener ioredis also prints them.
  redis.on("error", () => undefined);
  try {
    await redis.connect();
    const pong = await redis.ping();
    if (pong !== "PONG") throw new Error(`PING answered ${pong}`);
    const info = await redis.info("server");
    const version = /redis_version:(\S+)/.exec(info)?.[1] ?? "unknown";
    return `Redis ${version}`;
  } finally {
    redis.disconnect();
  }
}

export async function probeS3(endpoint: S3Endpoint): Promise<string> {
  const client = new S3Client({
    endpoint: endpoint.endpoint,
    region: endpoint.region,
    forcePathStyle: endpoint.forcePathStyle,
    credentials: { accessKeyId: endpoint.accessKeyId, secretAccessKey: endpoint.secretAccessKey },
    maxAttempts: 1,
  });
  try {
    const result = await client.send(new ListBucketsCommand({}), { abortSignal: AbortSignal.timeout(5_000) });
    return `S3 answers ListBuckets (${result.Buckets?.length ?? 0} buckets)`;
  } finally {
    client.destroy();
  }
}

const probes: { [S in ServiceName]: (endpoint: Endpoints[S]) => Promise<string> } = {
  kafka: probeKafka,
  postgres: probePostgres,
  redis: probeRedis,
  s3: probeS3,
};

export function probe<S extends ServiceName>(service: S, endpoint: Endpoints[S]): Promise<string> {
  return probes[service](endpoint);
}
