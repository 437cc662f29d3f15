// The Redis sinks on a real Cluster of three masters: the upsert sink's flushes spread over
// every master (one call per slot, one pipeline per master) and each key ends at its last
// record; the write-ahead sink refuses a key prefix without a hash tag at open, naming the
// setting, and with one its counters are exact; the at-least-once sink's plain commands go to
// the masters their keys live on.

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigurationError, GeneratorSource, type SinkFactory, StreamJob, silentLogger } from "@exactly/core";
import { redisClusterNodes } from "@exactly/testkit/endpoints";
import { sinkContext } from "@exactly/testkit/sink-context";
import type { Cluster } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { RedisAtLeastOnceSink, RedisUpsertSink, RedisWriteAheadSink } from "../src/index.ts";
import { deleteUnder, freshPrefix, keysUnder, readJson, rejection, withRedis } from "./helpers.ts";

interface Row {
  id: number;
  key: string;
}

const cluster = () => ({ clusterNodes: redisClusterNodes() });
const prefixes: string[] = [];
afterAll(async () => {
  for (const prefix of prefixes) await deleteUnder(cluster(), prefix);
});
const prefixFor = (label: string, tagged = false) => {
  const prefix = tagged ? `{${freshPrefix(label)}}:` : freshPrefix(label);
  prefixes.push(prefix);
  return prefix;
};

const KEYS = 500;
const RECORDS = 10_000;

async function runJob(sink: SinkFactory<Row>): Promise<void> {
  const job = new StreamJob({
    name: "redis-cluster-job",
    parallelism: 2,
    checkpoint: { storage: await mkdtemp(join(tmpdir(), "exactly-redis-cluster-")), intervalMs: 50 },
    restart: { maxRestarts: 0 },
    logger: silentLogger,
    batchSize: 200,
  });
  job
    .fromSource(
      new GeneratorSource({ count: RECORDS, splits: 1, generate: (i): Row => ({ id: i, key: `k${i % KEYS}` }) }),
    )
    .sinkTo(sink, { name: "redis-cluster-out" });
  await job.execute();
}

/** How many of `keys` each master holds: a key is on the master whose SCAN finds it. */
async function perMaster(client: Cluster, prefix: string): Promise<number[]> {
  return Promise.all(
    client.nodes("master").map(async (node) => {
      let count = 0;
      let cursor = "0";
      do {
        const [next, keys] = await node.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
        count += keys.length;
        cursor = next;
      } while (cursor !== "0");
      return count;
    }),
  );
}

describe("Redis sinks on a Cluster", () => {
  it("upserts: flushes spread over every master, each key at its last record, its version beside it", async () => {
    const prefix = prefixFor("cluster-upsert");
    await runJob(
      () =>
        new RedisUpsertSink<Row>({
          connection: cluster(),
          keyPrefix: prefix,
          key: (r) => r.key,
          version: (r) => r.id,
          value: { shape: "json" },
          maxBufferedRecords: 300,
        }),
    );
    await withRedis(cluster(), async (client) => {
      const masters = await perMaster(client as Cluster, prefix);
      expect(masters).toHaveLength(3);
      for (const held of masters) expect(held).toBeGreaterThan(0);
      expect(masters.reduce((a, b) => a + b, 0)).toBe(KEYS);
      for (let k = 0; k < KEYS; k += 37) {
        const last = RECORDS - KEYS + k;
        expect(await readJson<Row>(client, `${prefix}k${k}`)).toEqual({
          value: { id: last, key: `k${k}` },
          version: last,
        });
      }
    });
  });

  it("the write-ahead sink refuses a key prefix without a hash tag, naming keyPrefix", async () => {
    const sink = new RedisWriteAheadSink<Row>({
      connection: cluster(),
      keyPrefix: prefixFor("cluster-untagged"),
      operations: (r) => ({ op: "incrBy", key: "n", by: r.id }),
    });
    const error = await rejection(sink.open(sinkContext("redis-cluster-untagged")));
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).message).toMatch(/keyPrefix.*hash tag/);
  });

  it("the write-ahead sink with a tagged prefix: counters exact, every key in the tag's slot", async () => {
    const prefix = prefixFor("cluster-wal", true);
    await runJob(
      () =>
        new RedisWriteAheadSink<Row>({
          connection: cluster(),
          keyPrefix: prefix,
          operations: (r) => [
            { op: "hIncrBy", key: "counts", field: r.key, by: 1 },
            { op: "incrBy", key: "total", by: r.id },
          ],
          operationsPerCall: 300,
        }),
    );
    await withRedis(cluster(), async (client) => {
      const counts = await client.hgetall(`${prefix}counts`);
      expect(Object.keys(counts)).toHaveLength(KEYS);
      for (const n of Object.values(counts)) expect(Number(n)).toBe(RECORDS / KEYS);
      expect(Number(await client.get(`${prefix}total`))).toBe((RECORDS * (RECORDS - 1)) / 2);
      expect((await perMaster(client as Cluster, prefix)).filter((n) => n > 0)).toHaveLength(1);
    });
  });

  it("the at-least-once sink: plain increments, on the masters their keys live on", async () => {
    const prefix = prefixFor("cluster-alo");
    await runJob(
      () =>
        new RedisAtLeastOnceSink<Row>({
          connection: cluster(),
          keyPrefix: prefix,
          operations: (r) => ({ op: "incrBy", key: r.key, by: 1 }),
        }),
    );
    await withRedis(cluster(), async (client) => {
      const keys = (await keysUnder(client, prefix)).filter((key) => key.startsWith(prefix));
      expect(keys).toHaveLength(KEYS);
      // No kill in this run: at least once is exactly once here.
      for (const key of keys.slice(0, 50)) expect(Number(await client.get(key))).toBe(RECORDS / KEYS);
      for (const held of await perMaster(client as Cluster, prefix)) expect(held).toBeGreaterThan(0);
    });
  });
});
