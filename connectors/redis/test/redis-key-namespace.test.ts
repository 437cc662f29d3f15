// The names the Redis sinks keep for their own bookkeeping are out of reach of records: a
// record key ending in `:exactly-version` (an upsert version key's suffix) or holding
// `exactly-wal:` (the write-ahead markers' namespace) fails the job naming its position, before
// anything of its flush or checkpoint is applied; an upsert key whose version key is another
// sink's (one under "{p:" beside one under "p:") fails the same way; a key prefix with glob
// characters deletes only its own markers at a fresh start.

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ConfigurationError,
  FileSystemCheckpointStorage,
  type RecordPosition,
  RecordWriteError,
  type SinkContext,
} from "@exactly/core";
import { redisUrl } from "@exactly/testkit/endpoints";
import { sinkContext } from "@exactly/testkit/sink-context";
import { describe, expect, it } from "vitest";
import {
  RedisAtLeastOnceSink,
  type RedisOperation,
  RedisUpsertSink,
  RedisWriteAheadSink,
  versionKeyOf,
} from "../src/index.ts";
import { keysUnder, rejection, withRedis } from "./helpers.ts";
import { prefixesDeletedAfterAll } from "./prefixes.ts";

interface Row {
  id: number;
  key: string;
}

const prefixFor = prefixesDeletedAfterAll();
const at = (offset: number): RecordPosition => ({ source: "s", split: "0", offset });
const batch = (rows: Row[]) => ({ values: rows, positions: rows.map((r) => at(r.id)), timestamps: undefined });

async function storageContext(name: string): Promise<SinkContext> {
  return {
    ...sinkContext(name),
    storage: new FileSystemCheckpointStorage(await mkdtemp(join(tmpdir(), "exactly-redis-ns-"))),
  };
}

describe("I8: upsert: version keys are out of reach of record keys", () => {
  it("a record key naming another key's version key fails naming its position; nothing of the flush is applied", async () => {
    const prefix = prefixFor("upsert-version");
    const sink = new RedisUpsertSink<Row>({
      connection: redisUrl(),
      keyPrefix: prefix,
      key: (r) => r.key,
      version: (r) => r.id,
      // The would-be version: a number far above any real one, so later writes would be dropped.
      value: { shape: "string", of: (r) => (r.id === 3 ? "1000000" : `v${r.id}`) },
    });
    await sink.open(sinkContext("upsert-version"));
    try {
      // Record 3's key names the version key of record 1's key, "{x}" (a key with a hash tag).
      expect(versionKeyOf(`${prefix}{x}`)).toBe(`${prefix}{x}:exactly-version`);
      await sink.writeBatch(batch([{ id: 1, key: "{x}" }]));
      await sink.snapshotState(1);
      await sink.writeBatch(
        batch([
          { id: 2, key: "y" },
          { id: 3, key: "{x}:exactly-version" },
        ]),
      );
      const error = await rejection(sink.snapshotState(2));
      expect(error).toBeInstanceOf(RecordWriteError);
      expect((error as RecordWriteError).position).toEqual(at(3));
      expect((error as Error).message).toContain(":exactly-version");
    } finally {
      await sink.close();
    }
    await withRedis(redisUrl(), async (client) => {
      expect(await client.get(versionKeyOf(`${prefix}{x}`))).toBe("1");
      // Record 2 was in the refused flush: not applied either.
      expect(await client.get(`${prefix}y`)).toBeNull();
    });
  });

  it("a record key under the prefix that ends in :exactly-version is refused even if no key of that name exists", async () => {
    const prefix = prefixFor("upsert-suffix");
    const sink = new RedisUpsertSink<Row>({
      connection: redisUrl(),
      keyPrefix: prefix,
      key: (r) => r.key,
      version: (r) => r.id,
      value: { shape: "string", of: (r) => `v${r.id}` },
    });
    await sink.open(sinkContext("upsert-suffix"));
    try {
      await sink.writeBatch(batch([{ id: 7, key: "{tag}:exactly-version" }]));
      const error = await rejection(sink.snapshotState(1));
      expect(error).toBeInstanceOf(RecordWriteError);
      expect((error as RecordWriteError).position).toEqual(at(7));
    } finally {
      await sink.close();
    }
    await withRedis(redisUrl(), async (client) => expect(await keysUnder(client, prefix)).toEqual([]));
  });

  it("a record key whose version key is another sink's (under a prefix that adds a '{') fails naming its position", async () => {
    // Sink A keeps "<a>x" (no hash tag) with its version at "{<a>x}:exactly-version". Sink B,
    // under "{<a>", writes the key "{<a>x}" (tag "<a>x"), whose version key is the same name:
    // B's version would set A's, and A's later writes would be dropped as older.
    const a = prefixFor("upsert-shared-version");
    const b = `{${a}`;
    expect(versionKeyOf(`${b}x}`)).toBe(versionKeyOf(`${a}x`));
    const upsert = (keyPrefix: string, name: string) =>
      new RedisUpsertSink<Row>({
        connection: redisUrl(),
        keyPrefix,
        key: (r) => r.key,
        version: (r) => r.id,
        value: { shape: "string", of: (r) => `${name}${r.id}` },
      });
    const sinkA = upsert(a, "a");
    const sinkB = upsert(b, "b");
    await sinkA.open(sinkContext("upsert-a"));
    await sinkB.open(sinkContext("upsert-b"));
    try {
      await sinkA.writeBatch(batch([{ id: 1, key: "x" }]));
      await sinkA.snapshotState(1);
      await sinkB.writeBatch(batch([{ id: 1000, key: "x}" }]));
      const error = await rejection(sinkB.snapshotState(1));
      expect(error).toBeInstanceOf(RecordWriteError);
      expect((error as RecordWriteError).position).toEqual(at(1000));
      expect((error as Error).message).toContain(JSON.stringify(`${a}x`));
      await sinkA.writeBatch(batch([{ id: 2, key: "x" }]));
      await sinkA.snapshotState(2);
    } finally {
      await sinkA.close();
      await sinkB.close();
    }
    await withRedis(redisUrl(), async (client) => {
      expect(await client.get(`${a}x`)).toBe("a2");
      expect(await client.get(versionKeyOf(`${a}x`))).toBe("2");
      expect(await client.exists(`${b}x}`)).toBe(0);
    });
  });

  it("a key with a hash tag of its own under such a prefix is written as usual", async () => {
    const a = prefixFor("upsert-own-tag");
    const sink = new RedisUpsertSink<Row>({
      connection: redisUrl(),
      keyPrefix: `{${a}`,
      key: (r) => r.key,
      version: (r) => r.id,
      value: { shape: "string", of: (r) => `v${r.id}` },
    });
    await sink.open(sinkContext("upsert-own-tag"));
    try {
      // "{<a>}x" and "{<a>x}y" end in no "}", and "{<a>{t}}" is "{" + a key with a tag of its own.
      await sink.writeBatch(
        batch([
          { id: 1, key: "}x" },
          { id: 2, key: "x}y" },
          { id: 3, key: "{t}}" },
        ]),
      );
      await sink.snapshotState(1);
    } finally {
      await sink.close();
    }
    await withRedis(redisUrl(), async (client) => {
      expect(await client.mget(`{${a}}x`, `{${a}x}y`, `{${a}{t}}`)).toEqual(["v1", "v2", "v3"]);
    });
  });

  it("a key prefix of only '{' is refused, naming keyPrefix: two keys under it would share one version key", () => {
    // Under "{", the keys "{a" (no hash tag) and "{{a}" (tag "{a") both have "{{a}:exactly-version".
    expect(versionKeyOf("{a")).toBe(versionKeyOf("{{a}"));
    const make = () =>
      new RedisUpsertSink<Row>({
        connection: redisUrl(),
        keyPrefix: "{",
        key: (r) => r.key,
        version: (r) => r.id,
        value: { shape: "json" },
      });
    expect(make).toThrow(ConfigurationError);
    expect(make).toThrow(/keyPrefix/);
  });
});

describe("I8: write-ahead: markers are out of reach of operation keys", () => {
  it("an operation naming the sink's marker fails at the write, naming its record; the counter stays exact", async () => {
    const prefix = prefixFor("wal-marker");
    const name = "counts";
    const operations = (r: Row): RedisOperation =>
      r.id === 3
        ? { op: "hSet", key: `exactly-wal:${name}:0`, fields: { checkpoint: 0, ops: 0, done: 0 } }
        : { op: "incrBy", key: "total", by: 1 };
    const context = await storageContext(name);
    const sink = new RedisWriteAheadSink<Row>({ connection: redisUrl(), keyPrefix: prefix, name, operations });
    await sink.open(context);
    try {
      await sink.writeBatch(batch([0, 1, 2].map((id) => ({ id, key: "k" }))));
      await sink.snapshotState(1);
      await sink.notifyCheckpointComplete(1);
      const error = await rejection(sink.writeBatch(batch([3, 4].map((id) => ({ id, key: "k" })))));
      expect(error).toBeInstanceOf(RecordWriteError);
      expect((error as RecordWriteError).position).toEqual(at(3));
      expect((error as Error).message).toContain("exactly-wal:");
    } finally {
      await sink.close();
    }
    await withRedis(redisUrl(), async (client) => {
      expect(await client.get(`${prefix}total`)).toBe("3");
      expect(await client.hgetall(`${prefix}exactly-wal:${name}:0`)).toEqual({ checkpoint: "1", ops: "3", done: "1" });
    });
  });

  it("an operation key holding exactly-wal: anywhere (the markers of a sink under a longer prefix) is refused", async () => {
    const prefix = prefixFor("wal-nested");
    const sink = new RedisWriteAheadSink<Row>({
      connection: redisUrl(),
      keyPrefix: prefix,
      name: "outer",
      operations: (r) => ({ op: "incrBy", key: r.key, by: 1 }),
    });
    await sink.open(await storageContext("outer"));
    try {
      const error = await rejection(sink.writeBatch(batch([{ id: 5, key: "inner:exactly-wal:x:0" }])));
      expect(error).toBeInstanceOf(RecordWriteError);
      expect((error as RecordWriteError).position).toEqual(at(5));
    } finally {
      await sink.close();
    }
  });

  it("the at-least-once sink refuses the same keys, naming the record", async () => {
    const prefix = prefixFor("alo-marker");
    const sink = new RedisAtLeastOnceSink<Row>({
      connection: redisUrl(),
      keyPrefix: prefix,
      operations: (r) => ({ op: "hIncrBy", key: r.key, field: "checkpoint", by: 1 }),
    });
    await sink.open(sinkContext("alo-marker"));
    try {
      for (const [id, key] of [
        [1, "exactly-wal:counts:0"],
        [2, "{a}:exactly-version"],
      ] as const) {
        const error = await rejection(Promise.resolve().then(() => sink.writeBatch(batch([{ id, key }]))));
        expect(error).toBeInstanceOf(RecordWriteError);
        expect((error as RecordWriteError).position).toEqual(at(id));
      }
    } finally {
      await sink.close();
    }
    await withRedis(redisUrl(), async (client) => expect(await keysUnder(client, prefix)).toEqual([]));
  });

  it("a fresh start under a prefix with glob characters forgets only its own markers, not another prefix's", async () => {
    const base = prefixFor("wal-glob");
    // "pro?:" as a glob would match "prod:"; so would "*", "[d]" and "\\d" (an escaped "d").
    for (const [ours, theirs] of [
      ["pro?:", "prod:"],
      ["*:", "prod:"],
      ["pro[d]:", "prod:"],
      ["pro\\d:", "prod:"],
    ] as const) {
      const theirMarker = `${base}${theirs}exactly-wal:counts:0`;
      await withRedis(redisUrl(), (client) => client.hset(theirMarker, "checkpoint", 7, "ops", 10, "done", 1));
      const sink = new RedisWriteAheadSink<Row>({
        connection: redisUrl(),
        keyPrefix: base + ours,
        name: "counts",
        operations: (r) => ({ op: "incrBy", key: r.key, by: 1 }),
      });
      await sink.open(await storageContext("counts"));
      await sink.close();
      await withRedis(redisUrl(), async (client) => {
        expect(await client.hgetall(theirMarker), `prefix ${ours}`).toEqual({ checkpoint: "7", ops: "10", done: "1" });
      });
    }
  });
});
