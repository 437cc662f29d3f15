// The Redis write-ahead sink against the real server: a job's counters, list pushes, set adds
// and stream entries are exact; a checkpoint whose calls stopped part-way (an operation the
// server refused) resumes where the marker says, applying nothing twice; a fresh start under
// an old name forgets the old markers; a record whose operations cannot be encoded fails
// naming its position; a checkpoint logged in the earlier line format is still applied.

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  FileSystemCheckpointStorage,
  GeneratorSource,
  RecordWriteError,
  type SinkContext,
  StreamJob,
  silentLogger,
} from "@exactly/core";
import { redisUrl } from "@exactly/testkit/endpoints";
import { sinkContext } from "@exactly/testkit/sink-context";
import { describe, expect, it } from "vitest";
import { type RedisOperation, RedisWriteAheadSink } from "../src/index.ts";
import { rejection, withRedis } from "./helpers.ts";
import { prefixesDeletedAfterAll } from "./prefixes.ts";

interface Row {
  id: number;
  key: string;
}

const prefixFor = prefixesDeletedAfterAll();

async function storageContext(name: string): Promise<SinkContext> {
  return {
    ...sinkContext(name),
    storage: new FileSystemCheckpointStorage(await mkdtemp(join(tmpdir(), "exactly-redis-wal-"))),
  };
}

const KEYS = 20;
const operations = (r: Row): RedisOperation[] => [
  { op: "hIncrBy", key: "counts", field: r.key, by: 1 },
  { op: "incrBy", key: "total", by: r.id },
  { op: "rPush", key: `list:${r.key}`, values: [r.id] },
  { op: "sAdd", key: "seen", members: [r.key] },
  { op: "xAdd", key: "events", fields: { id: r.id } },
];

describe("RedisWriteAheadSink", () => {
  it("a job's counters, list pushes, set adds and stream entries are exact", async () => {
    const prefix = prefixFor("job");
    const records = 20_000;
    const job = new StreamJob({
      name: "redis-wal-job",
      parallelism: 2,
      checkpoint: { storage: await mkdtemp(join(tmpdir(), "exactly-redis-")), intervalMs: 50 },
      restart: { maxRestarts: 0 },
      logger: silentLogger,
      batchSize: 200,
    });
    job
      .fromSource(
        new GeneratorSource({
          count: records,
          splits: 4,
          ratePerSecond: 40_000,
          generate: (i): Row => ({ id: i, key: `k${i % KEYS}` }),
        }),
      )
      .sinkTo(
        () =>
          new RedisWriteAheadSink<Row>({
            connection: redisUrl(),
            keyPrefix: prefix,
            operations,
            operationsPerCall: 300,
          }),
        {
          name: "redis-wal",
        },
      );
    const result = await job.execute();
    expect(result.checkpointsCompleted).toBeGreaterThan(1);
    await withRedis(redisUrl(), async (client) => {
      const counts = await client.hgetall(`${prefix}counts`);
      expect(Object.keys(counts).length).toBe(KEYS);
      for (const count of Object.values(counts)) expect(Number(count)).toBe(records / KEYS);
      expect(Number(await client.get(`${prefix}total`))).toBe((records * (records - 1)) / 2);
      const list = (await client.lrange(`${prefix}list:k7`, 0, -1)).map(Number).sort((a, b) => a - b);
      expect(list).toEqual(Array.from({ length: records / KEYS }, (_, i) => 7 + i * KEYS));
      expect(await client.scard(`${prefix}seen`)).toBe(KEYS);
      expect(await client.xlen(`${prefix}events`)).toBe(records);
    });
  });

  it("a checkpoint stopped part-way by an operation the server refused resumes at that operation: nothing applied twice", async () => {
    const prefix = prefixFor("partial");
    await withRedis(redisUrl(), (client) => client.hset(`${prefix}bad`, "not", "a counter"));
    // Record 15 increments "bad", a hash: INCRBY fails there (WRONGTYPE), in the second call of 10.
    const ops = (r: Row): RedisOperation => ({ op: "incrBy", key: r.id === 15 ? "bad" : "total", by: 1 });
    const context = await storageContext("partial");
    const sink = new RedisWriteAheadSink<Row>({
      connection: redisUrl(),
      keyPrefix: prefix,
      operations: ops,
      operationsPerCall: 10,
    });
    await sink.open(context);
    try {
      await sink.writeBatch({
        values: Array.from({ length: 30 }, (_, id) => ({ id, key: "k" })),
        positions: Array.from({ length: 30 }, (_, offset) => ({ source: "s", split: "0", offset })),
        timestamps: undefined,
      });
      await sink.snapshotState(1);
      const error = await rejection(sink.notifyCheckpointComplete(1));
      expect(String((error as Error)?.cause ?? error)).toContain("WRONGTYPE");
      // The refused operation's record, by its source position.
      const cause = (error as Error).cause;
      expect(cause).toBeInstanceOf(RecordWriteError);
      expect((cause as RecordWriteError).position).toEqual({ source: "s", split: "0", offset: 15 });
    } finally {
      await sink.close();
    }
    await withRedis(redisUrl(), async (client) => {
      expect(Number(await client.get(`${prefix}total`))).toBe(15);
      // The key fixed, a new attempt (as after a restart) replays checkpoint 1 from its log.
      await client.del(`${prefix}bad`);
    });
    const retry = new RedisWriteAheadSink<Row>({
      connection: redisUrl(),
      keyPrefix: prefix,
      operations: ops,
      operationsPerCall: 7,
    });
    const state = { pending: [{ checkpointId: 1, subtask: 0, log: "0-1" }], current: "0-2" };
    await retry.open({ ...context, restoredCheckpointId: 1, restoredStates: [state], allRestoredStates: [state] });
    await retry.close();
    await withRedis(redisUrl(), async (client) => {
      expect(Number(await client.get(`${prefix}total`))).toBe(29);
      expect(Number(await client.get(`${prefix}bad`))).toBe(1);
    });
  });

  it("a checkpoint logged in the earlier line format (an object per record) is applied after an upgrade", async () => {
    const prefix = prefixFor("earlier-lines");
    const context = await storageContext("earlier-lines");
    const earlier = (offset: number) =>
      JSON.stringify({
        position: { source: "s", split: "0", offset },
        operations: [
          ["INCRBY", "total", offset],
          ["HINCRBY", "counts", "k", 1],
        ],
      });
    const logs = context.storage.logStore(context.sinkId);
    await logs.append("0-1", [earlier(1), earlier(2), earlier(3)]);
    await logs.sync("0-1");
    await logs.close?.();
    const sink = new RedisWriteAheadSink<Row>({
      connection: redisUrl(),
      keyPrefix: prefix,
      operations: (r) => ({ op: "incrBy", key: "total", by: r.id }),
      operationsPerCall: 4,
    });
    const state = { pending: [{ checkpointId: 1, subtask: 0, log: "0-1" }], current: "0-2" };
    await sink.open({ ...context, restoredCheckpointId: 1, restoredStates: [state], allRestoredStates: [state] });
    await sink.close();
    await withRedis(redisUrl(), async (client) => {
      expect(Number(await client.get(`${prefix}total`))).toBe(6);
      expect(await client.hgetall(`${prefix}counts`)).toEqual({ k: "3" });
    });
  });

  it("a record whose operations cannot be encoded fails naming its position", async () => {
    const sink = new RedisWriteAheadSink<Row>({
      connection: redisUrl(),
      keyPrefix: prefixFor("bad-record"),
      operations: (r) => ({ op: "incrBy", key: "total", by: r.id === 2 ? 0.5 : 1 }),
    });
    await sink.open(await storageContext("bad-record"));
    try {
      const error = await rejection(
        sink.writeBatch({
          values: [1, 2, 3].map((id) => ({ id, key: "k" })),
          positions: [1, 2, 3].map((offset) => ({ source: "s", split: "0", offset })),
          timestamps: undefined,
        }),
      );
      expect(error).toBeInstanceOf(RecordWriteError);
      expect((error as RecordWriteError).position).toEqual({ source: "s", split: "0", offset: 2 });
    } finally {
      await sink.close();
    }
  });
});
