// The Redis upsert sink against the real server: a job leaves each key at its last record with
// that record's version beside it; an older or replayed write never moves a key back, in calls
// larger than the script's MGET and MSET slices too; a script the server forgot (SCRIPT FLUSH) is loaded again; connections cut mid-write (CLIENT
// KILL) are harmless; a record that cannot be encoded fails naming its position; and a server
// that can lose acknowledged writes is refused, naming the setting (I7).

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ConfigurationError,
  GeneratorSource,
  type RecordPosition,
  RecordWriteError,
  StreamJob,
  silentLogger,
} from "@exactly/core";
import { redisUrl } from "@exactly/testkit/endpoints";
import { startScratchRedis } from "@exactly/testkit/redis/scratch-server";
import { sinkContext } from "@exactly/testkit/sink-context";
import { describe, expect, it } from "vitest";
import { connectRedis, RedisUpsertSink, type RedisUpsertSinkOptions, versionKeyOf } from "../src/index.ts";
import { readJson, rejection, withRedis } from "./helpers.ts";
import { prefixesDeletedAfterAll } from "./prefixes.ts";

interface Row {
  id: number;
  key: string;
  payload: string;
}

const prefixFor = prefixesDeletedAfterAll();

function options(keyPrefix: string, overrides: Partial<RedisUpsertSinkOptions<Row>> = {}): RedisUpsertSinkOptions<Row> {
  return {
    connection: redisUrl(),
    keyPrefix,
    key: (r) => r.key,
    version: (r) => r.id,
    value: { shape: "json" },
    ...overrides,
  };
}

const at = (offset: number): RecordPosition => ({ source: "test", split: "0", offset });
const batch = (rows: Row[]) => ({ values: rows, positions: rows.map((r) => at(r.id)), timestamps: undefined });

const KEYS = 50;
const row = (i: number): Row => ({ id: i, key: `k${i % KEYS}`, payload: `p${i}` });

async function runJob(prefix: string, records: number, onRunning?: () => void) {
  const job = new StreamJob({
    name: "redis-upsert-job",
    parallelism: 2,
    checkpoint: { storage: await mkdtemp(join(tmpdir(), "exactly-redis-")), intervalMs: 50 },
    restart: { maxRestarts: 20, initialDelayMs: 20 },
    logger: silentLogger,
    batchSize: 200,
  });
  job
    .fromSource(new GeneratorSource({ count: records, splits: 4, ratePerSecond: 40_000, generate: row }))
    .sinkTo(() => new RedisUpsertSink(options(prefix, { maxBufferedRecords: 300 })), { name: "redis-out" });
  return job.execute(onRunning ? { onRunning } : {});
}

async function expectLastRecords(prefix: string, records: number): Promise<void> {
  await withRedis(redisUrl(), async (client) => {
    for (let k = 0; k < KEYS; k++) {
      const last = records - 1 - ((records - 1 - k) % KEYS);
      expect(await readJson<Row>(client, `${prefix}k${k}`)).toEqual({ value: row(last), version: last });
    }
  });
}

describe("RedisUpsertSink", () => {
  it("a job leaves each key at its last record, with that record's version beside it", async () => {
    const prefix = prefixFor("job");
    const result = await runJob(prefix, 20_000);
    expect(result.checkpointsCompleted).toBeGreaterThan(1);
    await expectLastRecords(prefix, 20_000);
  });

  it("an older or replayed write never moves a key back; string and hash shapes, with a TTL on value and version", async () => {
    for (const value of [
      { shape: "string", of: (r: Row) => r.payload },
      { shape: "hash", fields: (r: Row) => ({ id: r.id, payload: r.payload }) },
    ] as const) {
      const prefix = prefixFor(value.shape);
      const sink = new RedisUpsertSink(options(prefix, { value, ttlMs: 60_000 }));
      await sink.open(sinkContext("shapes"));
      try {
        await sink.writeBatch(batch([{ id: 10, key: "a", payload: "ten" }]));
        await sink.snapshotState(1);
        // Replayed and older writes of "a" (and one new key) after a crash would look like this.
        await sink.writeBatch(
          batch([
            { id: 7, key: "a", payload: "seven" },
            { id: 10, key: "a", payload: "ten again" },
            { id: 3, key: "b", payload: "three" },
          ]),
        );
        await sink.snapshotState(2);
      } finally {
        await sink.close();
      }
      await withRedis(redisUrl(), async (client) => {
        const key = `${prefix}a`;
        if (value.shape === "string") expect(await client.get(key)).toBe("ten");
        else expect(await client.hgetall(key)).toEqual({ id: "10", payload: "ten" });
        expect(await client.get(versionKeyOf(key))).toBe("10");
        for (const k of [key, versionKeyOf(key)]) {
          const ttl = await client.pttl(k);
          expect(ttl).toBeGreaterThan(0);
          expect(ttl).toBeLessThanOrEqual(60_000);
        }
        expect(await client.get(versionKeyOf(`${prefix}b`))).toBe("3");
      });
    }
  });

  it("a call of more writes than one MGET or MSET slice applies each only if newer, and of a key named twice keeps the newer", async () => {
    const prefix = prefixFor("slices");
    const keys = 2_600;
    const sink = new RedisUpsertSink(
      options(prefix, {
        value: { shape: "string", of: (r) => r.payload },
        writesPerCall: 3_000,
        maxBufferedRecords: 3_000,
      }),
    );
    await sink.open(sinkContext("slices"));
    const rows = (from: number) =>
      Array.from({ length: keys }, (_, i) => ({ id: from + i, key: `k${i}`, payload: `p${from + i}` }));
    try {
      await sink.writeBatch(batch(rows(10_000)));
      await sink.snapshotState(1);
      // Older versions of every key, and newer ones of every other key, in one call.
      await sink.writeBatch(
        batch(rows(0).map((r, i) => (i % 2 === 0 ? r : { ...r, id: r.id + 20_000, payload: `p${r.id + 20_000}` }))),
      );
      await sink.snapshotState(2);
    } finally {
      await sink.close();
    }
    await withRedis(redisUrl(), async (client) => {
      for (const i of [0, 1, 1_500, 2_599]) {
        const version = i % 2 === 0 ? 10_000 + i : 20_000 + i;
        expect(await client.get(`${prefix}k${i}`)).toBe(`p${version}`);
        expect(await client.get(versionKeyOf(`${prefix}k${i}`))).toBe(String(version));
      }
    });
    // The sink sends a key once per flush; the script keeps a key named twice in one call right too.
    const port = await connectRedis(redisUrl());
    try {
      const key = `${prefix}twice`;
      const applied = await port.runScript("guardedUpsert", [
        {
          keys: [key, versionKeyOf(key), key, versionKeyOf(key), key, versionKeyOf(key)],
          args: ["string", 0, 0, "", 5, 1, "five", 9, 1, "nine", 7, 1, "seven"],
        },
      ]);
      expect(applied).toEqual([2]);
      await withRedis(redisUrl(), async (client) => {
        expect(await client.get(key)).toBe("nine");
        expect(await client.get(versionKeyOf(key))).toBe("9");
      });
    } finally {
      await port.close();
    }
  });

  it("a script the server forgot (SCRIPT FLUSH) is loaded again", async () => {
    const prefix = prefixFor("noscript");
    const sink = new RedisUpsertSink(options(prefix));
    await sink.open(sinkContext("noscript"));
    try {
      await sink.writeBatch(batch([row(1)]));
      await sink.snapshotState(1);
      await withRedis(redisUrl(), (client) => client.script("FLUSH"));
      await sink.writeBatch(batch([row(1 + KEYS)]));
      await sink.snapshotState(2);
    } finally {
      await sink.close();
    }
    await withRedis(redisUrl(), async (client) =>
      expect(await readJson<Row>(client, `${prefix}k1`)).toEqual({ value: row(1 + KEYS), version: 1 + KEYS }),
    );
  });

  it("connections cut mid-write (CLIENT KILL) change nothing: the job rides through and each key ends at its last record", async () => {
    const prefix = prefixFor("kill");
    let killed = 0;
    let running = true;
    const killer = (async () => {
      await withRedis(redisUrl(), async (client) => {
        while (running) {
          await new Promise((resolve) => setTimeout(resolve, 150));
          const list = String(await client.client("LIST"));
          for (const line of list.split("\n")) {
            if (!line.includes("name=exactly:redis-out")) continue;
            const id = line.match(/\bid=(\d+)/)?.[1];
            if (id) killed += Number(await client.client("KILL", "ID", id));
          }
        }
      });
    })();
    try {
      await runJob(prefix, 30_000);
    } finally {
      running = false;
      await killer;
    }
    expect(killed).toBeGreaterThan(0);
    await expectLastRecords(prefix, 30_000);
  });

  it("a record whose value cannot be encoded fails naming its position", async () => {
    const sink = new RedisUpsertSink(
      options(prefixFor("bad"), { value: { shape: "string", of: (r) => (r.id === 2 ? ({} as string) : r.payload) } }),
    );
    await sink.open(sinkContext("bad"));
    try {
      await sink.writeBatch(batch([row(1), row(2), row(3)]));
      const error = await rejection(sink.snapshotState(1));
      expect(error).toBeInstanceOf(RecordWriteError);
      expect((error as RecordWriteError).position).toEqual(at(2));
    } finally {
      await sink.close();
    }
  });
});

describe("durability (I7)", () => {
  it.each([
    [["appendonly no"], "appendonly", 'is "no"'],
    [["appendonly yes", "appendfsync everysec"], "appendfsync", 'is "everysec"'],
    [["appendonly yes", "appendfsync always", 'rename-command CONFIG ""'], "appendfsync", "not checked"],
  ] as const)(
    "a server with %j is refused naming %s; accepted when the user opts out",
    async (directives, setting, says) => {
      const server = await startScratchRedis(directives);
      try {
        const refused = new RedisUpsertSink({ ...options("durability:"), connection: server.url });
        const error = await rejection(refused.open(sinkContext("durability")));
        await refused.close();
        expect(error).toBeInstanceOf(ConfigurationError);
        expect((error as ConfigurationError).setting).toBe(setting);
        expect((error as Error).message).toContain(says);
        expect((error as Error).message).toContain("acceptLossyDurability");
        const accepted = new RedisUpsertSink({
          ...options("durability:"),
          connection: server.url,
          acceptLossyDurability: true,
        });
        await accepted.open(sinkContext("durability"));
        await accepted.close();
      } finally {
        await server.stop();
      }
    },
  );
});
