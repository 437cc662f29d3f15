// Each connector as a user installs it: core and that one connector from their tarballs, in a
// fresh npm project outside the workspace, with nothing else of ours. The program each runs is
// the one its guide shows (docs/connectors/examples/), type-checked there and run against the
// real service; what the service holds afterwards is read back here with the workspace's
// clients, and must be every record exactly once.
import { existsSync } from "node:fs";
import { copyFile } from "node:fs/promises";
import { join } from "node:path";
import { kafkaBrokers, pgUrl, redisUrl, s3Config } from "@exactly/testkit/endpoints";
import { idCounts, uniqueName } from "@exactly/testkit/ids";
import { beforeAll, describe, expect, it } from "vitest";
import { idCountsUnder, openUploads, testBucket } from "../../../connectors/file/test/s3/helpers.ts";
import { createTopic, exactlyOnceReport, newKafka, readCommitted } from "../../../connectors/kafka/test/helpers.ts";
import { withClient } from "../../../connectors/postgres/test/helpers.ts";
import { deleteUnder, keysUnder, readJson, withRedis } from "../../../connectors/redis/test/helpers.ts";
import { freshProject, packWorkspace, root, runTypeScript, tarball, typeCheck } from "../fixtures/packed-packages.ts";

const RECORDS = 20_000;
const CONNECTORS = ["kafka", "postgres", "redis", "file"] as const;
// Each connector's own client, which must come with it and with no other connector.
const CLIENTS: Record<(typeof CONNECTORS)[number], string> = {
  kafka: "@platformatic/kafka",
  postgres: "pg",
  redis: "ioredis",
  file: "@aws-sdk/client-s3",
};
// The S3 client is an optional peer of @exactly/file: the user installs it, at a version in its range.
const AWS_SDK = "@aws-sdk/client-s3@3.1175.0";

let packs: string;
beforeAll(async () => {
  packs = await packWorkspace(["packages/core", ...CONNECTORS.map((c) => `connectors/${c}`)]);
});

/** A fresh project with core and `connector` (plus `extra` from the registry), checked for what came with them, and the guide's `example` in it. */
async function installAlone(connector: (typeof CONNECTORS)[number], example: string, extra: string[] = []) {
  const app = await freshProject(`${connector}-alone`, [tarball(packs, "core"), tarball(packs, connector), ...extra]);
  for (const other of CONNECTORS) {
    expect(existsSync(join(app, "node_modules/@exactly", other)), `@exactly/${other}`).toBe(other === connector);
    expect(existsSync(join(app, "node_modules", CLIENTS[other])), CLIENTS[other]).toBe(other === connector);
  }
  await copyFile(join(root, "docs/connectors/examples", example), join(app, example));
  await typeCheck(app, example);
  return app;
}

/** Runs the example in `app` and returns its last line: `{ checkpointsCompleted }`. */
async function runExample(app: string, example: string, env: Record<string, string>) {
  const stdout = await runTypeScript(app, example, [String(RECORDS)], env);
  return JSON.parse(stdout.trim().split("\n").at(-1) as string) as { checkpointsCompleted: number };
}

const exactlyOnce = { lost: [], duplicated: [], phantom: [] };

describe("each connector, installed alone from its tarball, runs its guide's job against its real service", () => {
  it("kafka: orders into a topic, read back read_committed", async () => {
    const app = await installAlone("kafka", "kafka-orders.ts");
    const kafka = newKafka(kafkaBrokers());
    const topic = uniqueName("installed-orders");
    await createTopic(kafka, topic, 2);
    const run = await runExample(app, "kafka-orders.ts", {
      KAFKA_BROKERS: kafkaBrokers().join(","),
      ORDERS_TOPIC: topic,
    });
    expect(run.checkpointsCompleted).toBeGreaterThan(0);
    expect(exactlyOnceReport(idCounts(await readCommitted(topic, 2)), RECORDS)).toEqual(exactlyOnce);
  });

  it("postgres: orders upserted by the two-phase sink, read back by a fresh session", async () => {
    const app = await installAlone("postgres", "postgres-orders.ts");
    // A database of its own: the guide's table is plain `public.orders`.
    const database = `exactly_installed_${uniqueName("pg").slice(3).replace("-", "")}`;
    await withClient(pgUrl(), (c) => c.query(`CREATE DATABASE "${database}"`));
    const url = new URL(pgUrl());
    url.pathname = `/${database}`;
    try {
      await withClient(url.href, (c) =>
        c.query("CREATE TABLE orders (id bigint PRIMARY KEY, customer text, total numeric, placed_at timestamptz)"),
      );
      const run = await runExample(app, "postgres-orders.ts", { DATABASE_URL: url.href });
      expect(run.checkpointsCompleted).toBeGreaterThan(0);
      const rows = await withClient(url.href, async (c) => {
        const { rows } = await c.query<{ id: string; customer: string; total: string; placed_at: Date }>(
          "SELECT id, customer, total, placed_at FROM orders",
        );
        const prepared = await c.query("SELECT gid FROM pg_prepared_xacts WHERE database = current_database()");
        expect(prepared.rows, "prepared transactions left").toEqual([]);
        return rows;
      });
      const counts = new Map<number, number>();
      for (const row of rows) counts.set(Number(row.id), (counts.get(Number(row.id)) ?? 0) + 1);
      expect(exactlyOnceReport(counts, RECORDS)).toEqual(exactlyOnce);
      const sample = rows.find((r) => Number(r.id) === 4321);
      expect(sample).toEqual({ id: "4321", customer: "c21", total: "1080.25", placed_at: new Date(4321 * 1000) });
    } finally {
      await withClient(pgUrl(), (c) => c.query(`DROP DATABASE "${database}" WITH (FORCE)`));
    }
  });

  it("redis: each customer's latest order by upserts, and click counts by the write-ahead sink", async () => {
    const app = await installAlone("redis", "redis-latest-order.ts");
    await copyFile(join(root, "docs/connectors/examples/redis-click-counts.ts"), join(app, "redis-click-counts.ts"));
    await typeCheck(app, "redis-click-counts.ts");
    // A logical database of its own: the guide's key prefixes are fixed.
    const url = new URL(redisUrl());
    url.pathname = "/7";
    for (const prefix of ["orders:latest:", "clicks:"]) await deleteUnder(url.href, prefix);

    expect(
      (await runExample(app, "redis-latest-order.ts", { REDIS_URL: url.href })).checkpointsCompleted,
    ).toBeGreaterThan(0);
    expect(
      (await runExample(app, "redis-click-counts.ts", { REDIS_URL: url.href })).checkpointsCompleted,
    ).toBeGreaterThan(0);

    await withRedis(url.href, async (redis) => {
      // Customer c<k> last ordered at the largest sequence i < RECORDS with i % 100 = k.
      for (const k of [0, 37, 99]) {
        const last = RECORDS - 100 + k;
        expect(await readJson(redis, `orders:latest:c${k}`)).toEqual({
          value: { customer: `c${k}`, sequence: last, total: last / 4 },
          version: last,
        });
      }
      const latest = (await keysUnder(redis, "orders:latest:")).filter((key) => key.startsWith("orders:latest:c"));
      expect(latest).toHaveLength(100);
      // Every click counted once: ten pages of RECORDS / 10 each, and one stream entry per click.
      const perPage = await redis.hgetall("clicks:per-page");
      expect(Object.keys(perPage)).toHaveLength(10);
      expect(Object.values(perPage).map(Number)).toEqual(Array(10).fill(RECORDS / 10));
      expect(await redis.xlen("clicks:stream")).toBe(RECORDS);
    });
    for (const prefix of ["orders:latest:", "clicks:"]) await deleteUnder(url.href, prefix);
  });

  const s3 = testBucket("installed", s3Config);
  it("file on S3: events into part files with the checkpoints on S3, every object read back", async () => {
    const app = await installAlone("file", "s3-events.ts", [AWS_SDK]);
    const client = await s3.s3();
    const { endpoint, region, credentials } = s3Config();
    const run = await runExample(app, "s3-events.ts", {
      EVENTS_BUCKET: s3.bucket,
      S3_ENDPOINT: endpoint,
      AWS_REGION: region,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    });
    expect(run.checkpointsCompleted).toBeGreaterThan(0);
    expect(exactlyOnceReport(await idCountsUnder(client, s3.bucket, "events/"), RECORDS)).toEqual(exactlyOnce);
    expect(await openUploads(client, s3.bucket, "events/")).toEqual([]);
  });
});
