// redisSink({...}) picks one class per guarantee and record shape, and refuses a guarantee it
// has none for, naming `guarantee`; connectRedisReader reads back what a job wrote, apart from
// the sinks' port.

import { ConfigurationError, DeliveryGuarantee } from "@exactly/core";
import { redisUrl } from "@exactly/testkit/endpoints";
import { describe, expect, it } from "vitest";
import {
  connectRedisReader,
  RedisAtLeastOnceSink,
  RedisUpsertSink,
  RedisWriteAheadSink,
  redisSink,
} from "../src/index.ts";
import { freshPrefix, withRedis } from "./helpers.ts";

const operations = (record: { key: string }) => ({ op: "incrBy" as const, key: record.key, by: 1 });

describe("redisSink", () => {
  it("picks the write-ahead sink for operations, the at-least-once sink at AT_LEAST_ONCE, the upsert sink for versioned values", () => {
    const connection = redisUrl();
    expect(redisSink({ connection, keyPrefix: "p:", operations })()).toBeInstanceOf(RedisWriteAheadSink);
    expect(
      redisSink({ connection, keyPrefix: "p:", operations, guarantee: DeliveryGuarantee.AT_LEAST_ONCE })(),
    ).toBeInstanceOf(RedisAtLeastOnceSink);
    const upsert = redisSink<{ key: string }>({
      connection,
      keyPrefix: "p:",
      key: (r) => r.key,
      version: () => 1,
      value: { shape: "string", of: (r) => r.key },
    })();
    expect(upsert).toBeInstanceOf(RedisUpsertSink);
    expect(upsert.guarantee).toBe(DeliveryGuarantee.EXACTLY_ONCE);
  });

  it("refuses a guarantee it has no class for, naming guarantee, at definition", () => {
    const connection = redisUrl();
    const refused = (make: () => unknown) => {
      try {
        make();
      } catch (error) {
        return error instanceof ConfigurationError ? error.setting : error;
      }
      return undefined;
    };
    expect(refused(() => redisSink({ connection, keyPrefix: "p:", operations, guarantee: "NONE" as never }))).toBe(
      "guarantee",
    );
    expect(
      refused(() =>
        redisSink<{ key: string }>({
          connection,
          keyPrefix: "p:",
          key: (r) => r.key,
          version: () => 1,
          value: { shape: "string", of: (r) => r.key },
          guarantee: DeliveryGuarantee.AT_LEAST_ONCE as never,
        }),
      ),
    ).toBe("guarantee");
  });
});

describe("connectRedisReader", () => {
  it("reads back a hash and strings, missing keys as null", async () => {
    const prefix = freshPrefix("reader");
    await withRedis(redisUrl(), async (client) => {
      await client.hset(`${prefix}h`, { a: "1", b: "2" });
      await client.set(`${prefix}s`, "x");
    });
    const reader = await connectRedisReader(redisUrl());
    try {
      expect(await reader.hashAll(`${prefix}h`)).toEqual({ a: "1", b: "2" });
      expect(await reader.strings([`${prefix}s`, `${prefix}missing`])).toEqual(["x", null]);
    } finally {
      await reader.close();
      await withRedis(redisUrl(), async (client) => {
        await client.del(`${prefix}h`, `${prefix}s`);
      });
    }
  });
});
