// Every value a Redis sink sends is checked where it enters: a write-ahead or at-least-once
// operation whose key, field, member, score, increment or value is not a string or a finite
// number (NaN, undefined, null, an object, a Buffer) fails at the write naming its record,
// nothing of it logged or sent; an upsert value that is not finite fails its flush naming the
// record; a string with a lone surrogate, which Redis would store as U+FFFD, is refused; and
// a value longer than the server's `proto-max-bulk-len` fails naming the record and the
// setting, before it reaches the server.

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileSystemCheckpointStorage, type RecordPosition, RecordWriteError, type SinkContext } from "@exactly/core";
import { redisUrl } from "@exactly/testkit/endpoints";
import { startScratchRedis } from "@exactly/testkit/redis/scratch-server";
import { sinkContext } from "@exactly/testkit/sink-context";
import { describe, expect, it } from "vitest";
import {
  RedisAtLeastOnceSink,
  type RedisOperation,
  RedisUpsertSink,
  RedisWriteAheadSink,
  type ValueShape,
} from "../src/index.ts";
import { keysUnder, rejection, withRedis } from "./helpers.ts";
import { prefixesDeletedAfterAll } from "./prefixes.ts";

const prefixFor = prefixesDeletedAfterAll();
const at = (offset: number): RecordPosition => ({ source: "s", split: "0", offset });
const one = <T>(value: T, offset: number) => ({ values: [value], positions: [at(offset)], timestamps: undefined });

async function storageContext(name: string): Promise<SinkContext> {
  return {
    ...sinkContext(name),
    storage: new FileSystemCheckpointStorage(await mkdtemp(join(tmpdir(), "exactly-redis-values-"))),
  };
}

// Operations the sinks used to send as "", "NaN" or "[object Object]".
const BAD: [string, unknown][] = [
  ["set NaN", { op: "set", key: "k", value: Number.NaN }],
  ["set Infinity", { op: "set", key: "k", value: Number.POSITIVE_INFINITY }],
  ["set undefined", { op: "set", key: "k", value: undefined }],
  ["set null", { op: "set", key: "k", value: null }],
  ["set an object", { op: "set", key: "k", value: { a: 1 } }],
  ["set a Buffer", { op: "set", key: "k", value: Buffer.from("bytes") }],
  ["rPush undefined", { op: "rPush", key: "l", values: ["a", undefined] }],
  ["lPush an object", { op: "lPush", key: "l", values: [{}] }],
  ["sAdd null", { op: "sAdd", key: "s", members: [null] }],
  ["sAdd NaN", { op: "sAdd", key: "s", members: [Number.NaN] }],
  ["zAdd member undefined", { op: "zAdd", key: "z", score: 1, member: undefined }],
  ["zAdd member an object", { op: "zAdd", key: "z", score: 1, member: {} }],
  ["zAdd score a string", { op: "zAdd", key: "z", score: "1", member: "m" }],
  ["hIncrBy field undefined", { op: "hIncrBy", key: "h", field: undefined, by: 1 }],
  ["hIncrBy field an object", { op: "hIncrBy", key: "h", field: {}, by: 1 }],
  ["xAdd value NaN", { op: "xAdd", key: "x", fields: { a: Number.NaN } }],
  ["hSet value Infinity", { op: "hSet", key: "h", fields: { a: Number.NEGATIVE_INFINITY } }],
  ["hSet value a Buffer", { op: "hSet", key: "h", fields: { a: Buffer.from("b") } }],
];

describe("write-ahead and at-least-once: operation values are checked at the write", () => {
  it("each bad value fails the write-ahead sink's write naming its record; nothing is logged or applied", async () => {
    const prefix = prefixFor("wal-values");
    const context = await storageContext("wal-values");
    const sink = new RedisWriteAheadSink<unknown>({
      connection: redisUrl(),
      keyPrefix: prefix,
      operations: (op) => op as RedisOperation,
    });
    await sink.open(context);
    try {
      await sink.writeBatch(one({ op: "incrBy", key: "good", by: 1 }, 100));
      for (const [i, [what, op]] of BAD.entries()) {
        const error = await rejection(sink.writeBatch(one(op, i)));
        expect(error, what).toBeInstanceOf(RecordWriteError);
        expect((error as RecordWriteError).position, what).toEqual(at(i));
      }
      // The checkpoint then holds only the good record: completing it applies that one.
      await sink.snapshotState(1);
      await sink.notifyCheckpointComplete(1);
    } finally {
      await sink.close();
    }
    await withRedis(redisUrl(), async (client) => {
      expect((await keysUnder(client, prefix)).sort()).toEqual([`${prefix}exactly-wal:wal-values:0`, `${prefix}good`]);
      expect(await client.get(`${prefix}good`)).toBe("1");
    });
  });

  it("each bad value fails the at-least-once sink's write naming its record; nothing is sent", async () => {
    const prefix = prefixFor("alo-values");
    const sink = new RedisAtLeastOnceSink<unknown>({
      connection: redisUrl(),
      keyPrefix: prefix,
      operations: (op) => op as RedisOperation,
    });
    await sink.open(sinkContext("alo-values"));
    try {
      for (const [i, [what, op]] of BAD.entries()) {
        const error = await rejection(Promise.resolve().then(() => sink.writeBatch(one(op, i))));
        expect(error, what).toBeInstanceOf(RecordWriteError);
        expect((error as RecordWriteError).position, what).toEqual(at(i));
      }
      await sink.snapshotState(1);
    } finally {
      await sink.close();
    }
    await withRedis(redisUrl(), async (client) => expect(await keysUnder(client, prefix)).toEqual([]));
  });
});

describe("upsert: values are checked", () => {
  it.each([
    ["a string value NaN", { shape: "string", of: () => Number.NaN }],
    ["a string value Infinity", { shape: "string", of: () => Number.POSITIVE_INFINITY }],
    ["a hash field NaN", { shape: "hash", fields: () => ({ a: 1, b: Number.NaN }) }],
  ] as [string, ValueShape<number>][])("%s fails the flush naming its record", async (_what, value) => {
    const prefix = prefixFor("upsert-values");
    const sink = new RedisUpsertSink<number>({
      connection: redisUrl(),
      keyPrefix: prefix,
      key: (n) => `k${n}`,
      version: (n) => n,
      value,
    });
    await sink.open(sinkContext("upsert-values"));
    try {
      await sink.writeBatch(one(4, 4));
      const error = await rejection(sink.snapshotState(1));
      expect(error).toBeInstanceOf(RecordWriteError);
      expect((error as RecordWriteError).position).toEqual(at(4));
    } finally {
      await sink.close();
    }
    await withRedis(redisUrl(), async (client) => expect(await keysUnder(client, prefix)).toEqual([]));
  });
});

describe("a string Redis would store changed", () => {
  // Redis stores bytes: a lone surrogate has no UTF-8 form, and would be stored as U+FFFD.
  const lone = "a\ud800b";

  it("a lone surrogate in an operation's key, field or value fails the write naming its record", async () => {
    const prefix = prefixFor("wal-surrogate");
    const sink = new RedisWriteAheadSink<unknown>({
      connection: redisUrl(),
      keyPrefix: prefix,
      operations: (op) => op as RedisOperation,
    });
    await sink.open(await storageContext("wal-surrogate"));
    try {
      const ops: RedisOperation[] = [
        { op: "set", key: "k", value: lone },
        { op: "set", key: lone, value: "v" },
        { op: "hIncrBy", key: "h", field: lone, by: 1 },
        { op: "hSet", key: "h", fields: { [lone]: "v" } },
        { op: "sAdd", key: "s", members: ["ok", lone] },
      ];
      for (const [i, op] of ops.entries()) {
        const error = await rejection(sink.writeBatch(one(op, i)));
        expect(error, JSON.stringify(op)).toBeInstanceOf(RecordWriteError);
        expect((error as RecordWriteError).position).toEqual(at(i));
      }
    } finally {
      await sink.close();
    }
  });

  it("a lone surrogate in an upsert's key or string value fails the flush naming its record", async () => {
    const prefix = prefixFor("upsert-surrogate");
    for (const [key, value] of [
      ["k", lone],
      [lone, "v"],
    ]) {
      const sink = new RedisUpsertSink<number>({
        connection: redisUrl(),
        keyPrefix: prefix,
        key: () => key as string,
        version: (n) => n,
        value: { shape: "string", of: () => value as string },
      });
      await sink.open(sinkContext("upsert-surrogate"));
      try {
        await sink.writeBatch(one(9, 9));
        const error = await rejection(sink.snapshotState(1));
        expect(error).toBeInstanceOf(RecordWriteError);
        expect((error as RecordWriteError).position).toEqual(at(9));
      } finally {
        await sink.close();
      }
    }
    await withRedis(redisUrl(), async (client) => expect(await keysUnder(client, prefix)).toEqual([]));
  });
});

describe("a value above the server's proto-max-bulk-len", () => {
  const MB = 1024 * 1024;
  // Multi-byte characters: the limit is in bytes, not in string length.
  const tooLong = "é".repeat(MB / 2 + 1);
  const fits = "a".repeat(MB - 100);

  it("fails each sink naming the record and the setting", { timeout: 60_000 }, async () => {
    const server = await startScratchRedis(["proto-max-bulk-len 1mb"]);
    try {
      const wal = new RedisWriteAheadSink<string>({
        connection: server.url,
        keyPrefix: "wal:",
        operations: (v) => ({ op: "set", key: "k", value: v }),
        acceptLossyDurability: true,
      });
      await wal.open(await storageContext("wal-long"));
      try {
        await wal.writeBatch(one(fits, 1));
        const error = await rejection(wal.writeBatch(one(tooLong, 2)));
        expect(error).toBeInstanceOf(RecordWriteError);
        expect((error as RecordWriteError).position).toEqual(at(2));
        expect((error as Error).message).toContain("proto-max-bulk-len");
        await wal.snapshotState(1);
        await wal.notifyCheckpointComplete(1);
      } finally {
        await wal.close();
      }

      const alo = new RedisAtLeastOnceSink<string>({
        connection: server.url,
        keyPrefix: "alo:",
        operations: (v) => ({ op: "rPush", key: "l", values: ["short", v] }),
        acceptLossyDurability: true,
      });
      await alo.open(sinkContext("alo-long"));
      try {
        const error = await rejection(Promise.resolve().then(() => alo.writeBatch(one(tooLong, 3))));
        expect(error).toBeInstanceOf(RecordWriteError);
        expect((error as RecordWriteError).position).toEqual(at(3));
        expect((error as Error).message).toContain("proto-max-bulk-len");
      } finally {
        await alo.close();
      }

      const upsert = new RedisUpsertSink<string>({
        connection: server.url,
        keyPrefix: "u:",
        key: (v) => `k${v.length}`,
        version: () => 1,
        value: { shape: "string", of: (v) => v },
        acceptLossyDurability: true,
      });
      await upsert.open(sinkContext("upsert-long"));
      try {
        await upsert.writeBatch(one(fits, 4));
        await upsert.snapshotState(1);
        await upsert.writeBatch(one(tooLong, 5));
        const error = await rejection(upsert.snapshotState(2));
        expect(error).toBeInstanceOf(RecordWriteError);
        expect((error as RecordWriteError).position).toEqual(at(5));
        expect((error as Error).message).toContain("proto-max-bulk-len");
      } finally {
        await upsert.close();
      }

      await withRedis(server.url, async (client) => {
        // What fits was written; nothing of what did not.
        expect(await client.get("wal:k")).toBe(fits);
        expect(await client.get(`u:k${fits.length}`)).toBe(fits);
        expect(await client.exists("alo:l", `u:k${tooLong.length}`)).toBe(0);
      });
    } finally {
      await server.stop();
    }
  });
});
