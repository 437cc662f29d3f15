// Every value a Redis sink sends is checked where it enters: a write-ahead or at-least-once
// operation whose key, field, member, score, increment or value is not a string or a finite
// number (NaN, undefined, null, an object, a Buffer) fails at the write naming its record,
// nothing of it logged or sent; an upsert value that is not finite fails its flush naming the
// record; a string with a lone surrogate, which Redis would store as U+FFFD, is refused; and
// a value longer than the server's `proto-max-bulk-len` fails naming the record and the
// setting, before it reaches the server. Last, a table of every kind of JavaScript value and
// what each upsert value shape stores for it, or why it refuses it (a json value that
// JSON.stringify would store changed, nested too, naming its path).

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

// What each value shape of the upsert sink does with every kind of JavaScript value: the value
// Redis then holds, or the refusal (a RecordWriteError naming the record, and this reason).
// docs/connectors/redis.md ("Every JavaScript value, shape by shape") shows the same table.
type Outcome = { stored: string } | { refused: RegExp };
const stored = (text: string): Outcome => ({ stored: text });
const refused = (reason: RegExp): Outcome => ({ refused: reason });

const NOT_SCALAR = refused(/is not a string or a finite number/);
const NOT_FIELD = refused(/is not a string, finite number or boolean/);
const NO_UTF8 = refused(/lone surrogate/);

interface Row {
  readonly what: string;
  readonly value: () => unknown;
  /** `{ shape: "string", of }` returning the value. */
  readonly string: Outcome;
  /** `{ shape: "json", of }` returning the value, inside an object `{ v }`, and inside an array `[v]`. */
  readonly json: Outcome;
  readonly inObject: Outcome;
  readonly inArray: Outcome;
  /** `{ shape: "hash", fields }` with the value as field `f`. */
  readonly hash: Outcome;
}

const EVERY_VALUE: readonly Row[] = [
  {
    what: "undefined",
    value: () => undefined,
    string: NOT_SCALAR,
    json: refused(/the value \(undefined\) has no JSON form/),
    inObject: stored("{}"),
    inArray: refused(/undefined at \$\[0\] .*JSON\.stringify would store null/),
    hash: NOT_FIELD,
  },
  {
    what: "null",
    value: () => null,
    string: NOT_SCALAR,
    json: stored("null"),
    inObject: stored('{"v":null}'),
    inArray: stored("[null]"),
    hash: NOT_FIELD,
  },
  ...[
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["-Infinity", Number.NEGATIVE_INFINITY],
  ].map(
    ([what, n]): Row => ({
      what: what as string,
      value: () => n,
      string: NOT_SCALAR,
      json: refused(new RegExp(`^${what} at \\$ has no JSON form: JSON\\.stringify would store null`)),
      inObject: refused(new RegExp(`^${what} at \\$\\.v has no JSON form`)),
      inArray: refused(new RegExp(`^${what} at \\$\\[0\\] has no JSON form`)),
      hash: NOT_FIELD,
    }),
  ),
  {
    what: "-0",
    value: () => -0,
    string: stored("0"),
    json: stored("0"),
    inObject: stored('{"v":0}'),
    inArray: stored("[0]"),
    hash: stored("0"),
  },
  {
    // ioredis sends an integer beyond 2^53 in its exact digits; JSON.stringify writes JavaScript's text.
    what: "1e21",
    value: () => 1e21,
    string: stored("1000000000000000000000"),
    json: stored("1e+21"),
    inObject: stored('{"v":1e+21}'),
    inArray: stored("[1e+21]"),
    hash: stored("1000000000000000000000"),
  },
  {
    what: "1.5e-7",
    value: () => 1.5e-7,
    string: stored("1.5e-7"),
    json: stored("1.5e-7"),
    inObject: stored('{"v":1.5e-7}'),
    inArray: stored("[1.5e-7]"),
    hash: stored("1.5e-7"),
  },
  {
    what: "0.1",
    value: () => 0.1,
    string: stored("0.1"),
    json: stored("0.1"),
    inObject: stored('{"v":0.1}'),
    inArray: stored("[0.1]"),
    hash: stored("0.1"),
  },
  {
    what: "true",
    value: () => true,
    string: NOT_SCALAR,
    json: stored("true"),
    inObject: stored('{"v":true}'),
    inArray: stored("[true]"),
    hash: stored("true"),
  },
  {
    what: "an invalid Date",
    value: () => new Date(Number.NaN),
    string: NOT_SCALAR,
    json: refused(/^an invalid Date at \$ has no JSON form: JSON\.stringify would store null/),
    inObject: refused(/^an invalid Date at \$\.v /),
    inArray: refused(/^an invalid Date at \$\[0\] /),
    hash: NOT_FIELD,
  },
  {
    what: "a valid Date",
    value: () => new Date(0),
    string: NOT_SCALAR,
    json: stored('"1970-01-01T00:00:00.000Z"'),
    inObject: stored('{"v":"1970-01-01T00:00:00.000Z"}'),
    inArray: stored('["1970-01-01T00:00:00.000Z"]'),
    hash: NOT_FIELD,
  },
  {
    what: "a bigint",
    value: () => 1n,
    string: NOT_SCALAR,
    json: refused(/BigInt/),
    inObject: refused(/BigInt/),
    inArray: refused(/BigInt/),
    hash: NOT_FIELD,
  },
  {
    what: "a string",
    value: () => "héllo",
    string: stored("héllo"),
    json: stored('"héllo"'),
    inObject: stored('{"v":"héllo"}'),
    inArray: stored('["héllo"]'),
    hash: stored("héllo"),
  },
  {
    what: "the empty string",
    value: () => "",
    string: stored(""),
    json: stored('""'),
    inObject: stored('{"v":""}'),
    inArray: stored('[""]'),
    hash: stored(""),
  },
  {
    what: "a string with NUL",
    value: () => "a\0b",
    string: stored("a\0b"),
    json: stored('"a\\u0000b"'),
    inObject: stored('{"v":"a\\u0000b"}'),
    inArray: stored('["a\\u0000b"]'),
    hash: stored("a\0b"),
  },
  {
    what: "a string with a lone surrogate",
    value: () => "a\ud800b",
    string: NO_UTF8,
    // JSON.stringify escapes it: the text is ASCII, and JSON.parse gives the same string back.
    json: stored('"a\\ud800b"'),
    inObject: stored('{"v":"a\\ud800b"}'),
    inArray: stored('["a\\ud800b"]'),
    hash: NO_UTF8,
  },
  {
    what: "a string with a surrogate pair",
    value: () => "a😀b",
    string: stored("a😀b"),
    json: stored('"a😀b"'),
    inObject: stored('{"v":"a😀b"}'),
    inArray: stored('["a😀b"]'),
    hash: stored("a😀b"),
  },
  {
    what: "a Buffer",
    value: () => Buffer.from("ab"),
    string: NOT_SCALAR,
    json: refused(/^a Buffer at \$ has no JSON form: JSON\.stringify would store \{"type":"Buffer"/),
    inObject: refused(/^a Buffer at \$\.v /),
    inArray: refused(/^a Buffer at \$\[0\] /),
    hash: NOT_FIELD,
  },
  {
    what: "a Uint8Array",
    value: () => new Uint8Array([1, 2]),
    string: NOT_SCALAR,
    json: refused(/^a Uint8Array at \$ has no JSON form: JSON\.stringify would store an object of its elements/),
    inObject: refused(/^a Uint8Array at \$\.v /),
    inArray: refused(/^a Uint8Array at \$\[0\] /),
    hash: NOT_FIELD,
  },
  {
    what: "a Map",
    value: () => new Map([["a", 1]]),
    string: NOT_SCALAR,
    json: refused(/^a Map at \$ has no JSON form: JSON\.stringify would store \{\}/),
    inObject: refused(/^a Map at \$\.v /),
    inArray: refused(/^a Map at \$\[0\] /),
    hash: NOT_FIELD,
  },
  {
    what: "a Set",
    value: () => new Set([1]),
    string: NOT_SCALAR,
    json: refused(/^a Set at \$ has no JSON form: JSON\.stringify would store \{\}/),
    inObject: refused(/^a Set at \$\.v /),
    inArray: refused(/^a Set at \$\[0\] /),
    hash: NOT_FIELD,
  },
  {
    what: "a function",
    value: () => () => 1,
    string: NOT_SCALAR,
    json: refused(/the value \(a function\) has no JSON form/),
    inObject: refused(/^a function at \$\.v has no JSON form: JSON\.stringify would leave it out/),
    inArray: refused(/^a function at \$\[0\] has no JSON form: JSON\.stringify would store null/),
    hash: NOT_FIELD,
  },
  {
    what: "a symbol",
    value: () => Symbol("s"),
    string: NOT_SCALAR,
    json: refused(/the value \(a symbol\) has no JSON form/),
    inObject: refused(/^a symbol at \$\.v has no JSON form: JSON\.stringify would leave it out/),
    inArray: refused(/^a symbol at \$\[0\] has no JSON form: JSON\.stringify would store null/),
    hash: NOT_FIELD,
  },
  {
    what: "nested objects and arrays",
    value: () => ({ a: { b: [1, "x", null, { c: false }] }, d: [] }),
    string: NOT_SCALAR,
    json: stored('{"a":{"b":[1,"x",null,{"c":false}]},"d":[]}'),
    inObject: stored('{"v":{"a":{"b":[1,"x",null,{"c":false}]},"d":[]}}'),
    inArray: stored('[{"a":{"b":[1,"x",null,{"c":false}]},"d":[]}]'),
    hash: NOT_FIELD,
  },
  {
    what: "NaN deep inside objects and arrays",
    value: () => ({ a: { "b c": [1, { d: Number.NaN }] } }),
    string: NOT_SCALAR,
    json: refused(/^NaN at \$\.a\["b c"\]\[1\]\.d has no JSON form/),
    inObject: refused(/^NaN at \$\.v\.a\["b c"\]\[1\]\.d has no JSON form/),
    inArray: refused(/^NaN at \$\[0\]\.a\["b c"\]\[1\]\.d has no JSON form/),
    hash: NOT_FIELD,
  },
  {
    what: "an invalid Date deep inside",
    value: () => [{ at: [new Date("not a date")] }],
    string: NOT_SCALAR,
    json: refused(/^an invalid Date at \$\[0\]\.at\[0\] has no JSON form/),
    inObject: refused(/^an invalid Date at \$\.v\[0\]\.at\[0\] /),
    inArray: refused(/^an invalid Date at \$\[0\]\[0\]\.at\[0\] /),
    hash: NOT_FIELD,
  },
  {
    what: "an object whose toJSON gives Infinity",
    value: () => ({ toJSON: () => Number.POSITIVE_INFINITY }),
    string: NOT_SCALAR,
    json: refused(/^Infinity at \$ has no JSON form/),
    inObject: refused(/^Infinity at \$\.v has no JSON form/),
    inArray: refused(/^Infinity at \$\[0\] has no JSON form/),
    hash: NOT_FIELD,
  },
  {
    what: "an object with an undefined property",
    value: () => ({ a: 1, b: undefined }),
    string: NOT_SCALAR,
    json: stored('{"a":1}'),
    inObject: stored('{"v":{"a":1}}'),
    inArray: stored('[{"a":1}]'),
    hash: NOT_FIELD,
  },
  {
    what: "a cycle",
    value: () => {
      const o: Record<string, unknown> = {};
      o.self = o;
      return o;
    },
    string: NOT_SCALAR,
    json: refused(/circular/),
    inObject: refused(/circular/),
    inArray: refused(/circular/),
    hash: NOT_FIELD,
  },
];

type Column = "string" | "json" | "inObject" | "inArray" | "hash";

function shapeOf(column: Column, value: () => unknown): ValueShape<number> {
  switch (column) {
    case "string":
      return { shape: "string", of: () => value() as string };
    case "json":
      return { shape: "json", of: () => value() };
    case "inObject":
      return { shape: "json", of: () => ({ v: value() }) };
    case "inArray":
      return { shape: "json", of: () => [value()] };
    case "hash":
      return { shape: "hash", fields: () => ({ f: value() as string }) };
  }
}

/** What happened to one record: the text Redis holds, or the reason it was refused. */
type Seen = { stored: string } | { refusedWith: string };

/** Writes one record through an upsert sink of `value`'s shape; what Redis then holds, or why it was refused. */
async function throughUpsert(prefix: string, value: ValueShape<number>, offset: number): Promise<Seen> {
  const sink = new RedisUpsertSink<number>({
    connection: redisUrl(),
    keyPrefix: prefix,
    key: () => "k",
    version: () => 1,
    value,
  });
  await sink.open(sinkContext("every-value"));
  let error: unknown;
  try {
    await sink.writeBatch(one(offset, offset));
    error = await rejection(sink.snapshotState(1));
  } finally {
    await sink.close();
  }
  return withRedis(redisUrl(), async (client) => {
    if (error !== undefined) {
      expect(error).toBeInstanceOf(RecordWriteError);
      expect((error as RecordWriteError).position).toEqual(at(offset));
      // Nothing of the refused record reached the server.
      expect(await keysUnder(client, prefix)).toEqual([]);
      return { refusedWith: ((error as Error).cause as Error).message };
    }
    const text = value.shape === "hash" ? await client.hget(`${prefix}k`, "f") : await client.get(`${prefix}k`);
    return { stored: text as string };
  });
}

describe("every JavaScript value, shape by shape: stored as it is, or refused naming the record", () => {
  it.each(EVERY_VALUE.map((row, i) => [row.what, row, i] as const))("%s", async (_what, row, i) => {
    for (const column of ["string", "json", "inObject", "inArray", "hash"] as const) {
      const expected = row[column];
      const got = await throughUpsert(prefixFor(`every-${i}-${column}`), shapeOf(column, row.value), 1000 + i);
      if ("stored" in expected) {
        expect(got, `${column}: stored`).toEqual(expected);
      } else {
        expect("refusedWith" in got ? got.refusedWith : `stored ${JSON.stringify(got)}`, `${column}: refused`).toMatch(
          expected.refused,
        );
      }
    }
  });

  it("the hash shape takes an object of fields, never an array, a Buffer or a Map", async () => {
    for (const [what, fields, reason] of [
      ["an array", () => ["a"], /fields \(an array\) are not an object of fields/],
      ["a Buffer", () => Buffer.from("ab"), /fields \(a Buffer\) are not an object of fields/],
      ["a Map", () => new Map([["a", "b"]]), /fields \(a Map\) are not an object of fields/],
      ["null", () => null, /fields \(null\) are not an object of fields/],
      ["no field", () => ({}), /a hash needs at least one field/],
      ["a field name with a lone surrogate", () => ({ "a\ud800": "v" }), /lone surrogate/],
    ] as const) {
      const got = await throughUpsert(
        prefixFor("hash-fields"),
        { shape: "hash", fields: fields as () => Record<string, string> },
        7,
      );
      expect("refusedWith" in got ? got.refusedWith : `stored ${JSON.stringify(got)}`, what).toMatch(reason);
    }
  });
});
