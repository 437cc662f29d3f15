// Redis going away in the middle of a job, for real: a restart (SIGTERM, start again) and a
// crash (SIGKILL of redis-server, start again on its append-only file, fsynced on every write).
// Under both, each sink's job rides through (its connections fail; it retries, or restarts from
// its last checkpoint) and the result is exact: every count and every list entry once, every key at its
// last record. A reader polls the upsert sink's keys all along and never sees a key's version
// go back ("no jump back"), not during the outage, not during the replay after it.
// Runs in the "services-restart" project, before the other tests and beside only tests that
// restart other servers: the fault ends every connection to the server.

import type { SinkFactory } from "@exactly/core";
import { crashRedis, redisUrl, restartRedis } from "@exactly/testkit/endpoints";
import { runThroughFault } from "@exactly/testkit/fault-run";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { RedisUpsertSink, RedisWriteAheadSink, versionKeyOf } from "../src/index.ts";
import { deleteUnder, freshPrefix, withRedis } from "./helpers.ts";

interface Row {
  id: number;
  key: string;
}

const prefixes: string[] = [];
afterAll(async () => {
  for (const prefix of prefixes) await deleteUnder(redisUrl(), prefix);
});
const prefixFor = (label: string) => {
  const prefix = freshPrefix(label);
  prefixes.push(prefix);
  return prefix;
};

const KEYS = 200;
const RECORDS = 40_000;

/** The job of both sinks, with the fault 1.5 s in. */
function runThrough<B>(sink: SinkFactory<Row>, fault: () => Promise<void>, before: () => Promise<B>) {
  return runThroughFault({
    name: "redis-fault",
    sink,
    records: RECORDS,
    generate: (i): Row => ({ id: i, key: `k${i % KEYS}` }),
    ratePerSecond: 10_000,
    // The default classification: the outage is ridden through however long it lasts.
    restart: { initialDelayMs: 200, maxDelayMs: 1000 },
    faultAfterMs: 1500,
    before,
    fault,
  });
}

/**
 * Polls every key's version every few milliseconds until stopped; returns the keys whose
 * version was ever seen lower than before, and how many reads succeeded (a reader that never
 * read checked nothing).
 */
function pollVersions(prefix: string): {
  stop: () => Promise<{ wentBack: string[]; reads: number; failedReads: number }>;
} {
  const client = new Redis(redisUrl(), { maxRetriesPerRequest: 0, enableOfflineQueue: false });
  client.on("error", () => {});
  const highest = new Map<string, number>();
  const wentBack = new Set<string>();
  let reads = 0;
  let failedReads = 0;
  let running = true;
  const keys = Array.from({ length: KEYS }, (_, k) => versionKeyOf(`${prefix}k${k}`));
  const loop = (async () => {
    while (running) {
      try {
        const versions = await client.mget(...keys);
        reads++;
        versions.forEach((v, k) => {
          if (v === null) return;
          const key = keys[k] as string;
          const seen = highest.get(key) ?? Number.NEGATIVE_INFINITY;
          if (Number(v) < seen) wentBack.add(key);
          else highest.set(key, Number(v));
        });
      } catch {
        // The server is down: keep polling until it is back.
        failedReads++;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      client.disconnect();
      return { wentBack: [...wentBack], reads, failedReads };
    },
  };
}

describe.each([
  ["a restart", restartRedis],
  ["a SIGKILL of redis-server, down 5 s", () => crashRedis({ downMs: 5000 })],
] as const)("Redis: %s in the middle of a job", (_label, fault) => {
  it("write-ahead sink: every count and list entry exactly once", async () => {
    const prefix = prefixFor("fault-wal");
    const counted = () =>
      withRedis(redisUrl(), async (client) =>
        Object.values(await client.hgetall(`${prefix}counts`)).reduce((sum, n) => sum + Number(n), 0),
      );
    const result = await runThrough(
      () =>
        new RedisWriteAheadSink<Row>({
          connection: redisUrl(),
          keyPrefix: prefix,
          operations: (r) => [
            { op: "hIncrBy", key: "counts", field: r.key, by: 1 },
            { op: "rPush", key: "ids", values: [r.id] },
          ],
          operationsPerCall: 200,
        }),
      fault,
      counted,
    );
    // The fault fell in the middle: some checkpoints applied before it, the job still running.
    expect(result.before).toBeGreaterThan(0);
    expect(result.before).toBeLessThan(RECORDS);
    expect(result.endedBeforeFault).toBe(false);
    await withRedis(redisUrl(), async (client) => {
      const counts = await client.hgetall(`${prefix}counts`);
      expect(Object.keys(counts)).toHaveLength(KEYS);
      for (const n of Object.values(counts)) expect(Number(n)).toBe(RECORDS / KEYS);
      const ids = (await client.lrange(`${prefix}ids`, 0, -1)).map(Number);
      expect(ids).toHaveLength(RECORDS);
      expect(new Set(ids).size).toBe(RECORDS);
    });
  });

  it("upsert sink: each key at its last record, and no reader ever saw a version go back", async () => {
    const prefix = prefixFor("fault-upsert");
    const reader = pollVersions(prefix);
    let polled: { wentBack: string[]; reads: number; failedReads: number };
    try {
      const result = await runThrough(
        () =>
          new RedisUpsertSink<Row>({
            connection: redisUrl(),
            keyPrefix: prefix,
            key: (r) => r.key,
            version: (r) => r.id,
            value: { shape: "json" },
            maxBufferedRecords: 200,
          }),
        fault,
        () => withRedis(redisUrl(), (client) => client.get(versionKeyOf(`${prefix}k0`))),
      );
      expect(Number(result.before)).toBeGreaterThan(0);
      expect(Number(result.before)).toBeLessThan(RECORDS - KEYS);
      expect(result.endedBeforeFault).toBe(false);
    } finally {
      polled = await reader.stop();
    }
    // The reader read before, during (its reads failed while the server was down) and after.
    expect(polled.reads).toBeGreaterThan(100);
    expect(polled.failedReads).toBeGreaterThan(0);
    expect(polled.wentBack).toEqual([]);
    await withRedis(redisUrl(), async (client) => {
      for (let k = 0; k < KEYS; k++) {
        const last = RECORDS - KEYS + k;
        const [value, version] = await client.mget(`${prefix}k${k}`, versionKeyOf(`${prefix}k${k}`));
        expect({ value: JSON.parse(value as string), version: Number(version) }).toEqual({
          value: { id: last, key: `k${k}` },
          version: last,
        });
      }
    });
  });
});
