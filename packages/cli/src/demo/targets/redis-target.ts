/**
 * `exactly demo --sink redis`: the demo job writes each record twice, through two sinks.
 *   - `<prefix>:counts`, a hash: the write-ahead sink's `HINCRBY <prefix>:counts <key> 1`
 *     per record. The increment is not idempotent, so a record applied twice shows as an
 *     extra count and a lost one as a missing count. At least once, a plain pipelined sink
 *     does the same increments without a log or guard, and a kill shows extra counts.
 *   - `<prefix>:latest:<key>`: the upsert sink's latest `seq` of each key, versioned by the
 *     `seq` itself, so it ends at the key's record count whatever was replayed.
 * The demo clears its prefix at start and reads both back at the end. `@exactly/redis` is
 * not a dependency of the CLI: it is loaded when such a demo starts.
 */
import { ConfigurationError, DeliveryGuarantee, type SinkFactory } from "@exactly/core";
import type * as RedisConnector from "@exactly/redis";
import { loadConnector } from "../../load-connector.ts";
import { addressOf, serverAt } from "../../server-check.ts";
import type { DemoRecord } from "../demo-record.ts";
import type { OutputCheck } from "../verify-output.ts";
import type { DemoTarget } from "./demo-target.ts";

export const REDIS_CONNECTOR = "@exactly/redis";

export type RedisConnectorModule = typeof RedisConnector;

/** Imports the Redis connector, or fails with the command that installs it. */
export function loadRedisConnector(specifier: string = REDIS_CONNECTOR): Promise<RedisConnectorModule> {
  return loadConnector<RedisConnectorModule>(specifier, "--sink redis");
}

export interface RedisDemoSettings {
  readonly url: string;
  /** Every key the demo writes starts with `<keyPrefix>:`. */
  readonly keyPrefix: string;
}

/** `--sink redis`: the server and the prefix of every key the demo writes (and clears first). */
export const redisTarget: DemoTarget<RedisDemoSettings> = {
  sink: "redis",
  flags: [
    { flags: "--redis-url <url>", description: "the Redis server (default: $EXACTLY_REDIS_URL)" },
    {
      flags: "--key-prefix <prefix>",
      description: "prefix of every key the demo writes; cleared at start (default: exactly-demo)",
    },
  ],
  settings(options) {
    const url = options.redisUrl ?? process.env.EXACTLY_REDIS_URL;
    if (!url) throw new ConfigurationError("--redis-url", "give the Redis URL (or set EXACTLY_REDIS_URL)");
    const keyPrefix = options.keyPrefix ?? "exactly-demo";
    // The demo deletes every key under the prefix: an empty one would be the whole server.
    if (!/^[\w.:{}-]+$/.test(keyPrefix)) {
      throw new ConfigurationError(
        "--key-prefix",
        `must be letters, digits and . _ - : { } only (the demo deletes <prefix>:*), got ${JSON.stringify(keyPrefix)}`,
      );
    }
    return { url, keyPrefix };
  },
  identity: (target) => ({ keyPrefix: target.keyPrefix }),
  server: (target) => serverAt("--redis-url (or $EXACTLY_REDIS_URL)", "the Redis server", addressOf(target.url, 6379)),
  prepare: clearDemoPrefix,
  sinks: (target, run) => redisDemoSinks(target, run.guarantee),
  async verify(target, run) {
    const { keysWithWrongCount, ...check } = await verifyDemoRedis(target, run.records, run.keys);
    return { check, leftOpen: 0, fields: { keyPrefix: target.keyPrefix, keysWithWrongCount } };
  },
  rows: (s) => [
    [
      "output",
      `${s.keyPrefix}:counts (${s.guarantee === "exactly-once" ? "write-ahead" : "at-least-once"} sink), ${s.keyPrefix}:latest:<key> (upsert sink)`,
    ],
    ["keys miscounted", String(s.keysWithWrongCount)],
    ["checkpoints in", s.out],
  ],
};

/** The demo's two Redis sinks, by the name each goes by in the job. */
async function redisDemoSinks(
  target: RedisDemoSettings,
  guarantee: DeliveryGuarantee,
): Promise<Record<string, SinkFactory<DemoRecord>>> {
  const redis = await loadRedisConnector();
  const prefix = `${target.keyPrefix}:`;
  const count = (r: DemoRecord) => ({ op: "hIncrBy" as const, key: "counts", field: String(r.key), by: 1 });
  return {
    "demo-redis-counts":
      guarantee === DeliveryGuarantee.EXACTLY_ONCE
        ? () =>
            new redis.RedisWriteAheadSink<DemoRecord>({ connection: target.url, keyPrefix: prefix, operations: count })
        : // Small pipelines, as a plain client's batches: a kill then replays increments already applied.
          () =>
            new redis.RedisAtLeastOnceSink<DemoRecord>({
              connection: target.url,
              keyPrefix: prefix,
              operations: count,
              operationsPerFlush: 100,
            }),
    "demo-redis-latest": () =>
      new redis.RedisUpsertSink<DemoRecord>({
        connection: target.url,
        keyPrefix: `${prefix}latest:`,
        key: (r) => String(r.key),
        version: (r) => r.seq,
        value: { shape: "string", of: (r) => r.seq },
      }),
  };
}

/**
 * Deletes every key under the demo's prefix, so the counts start from nothing, and the
 * version keys beside the latest values (`{<key>}:exactly-version`: a key without a hash tag
 * is its version's tag), so an earlier run's versions do not refuse this run's writes.
 */
async function clearDemoPrefix(target: RedisDemoSettings): Promise<void> {
  const redis = await loadRedisConnector();
  const connection = await redis.connectRedis(target.url, "demo");
  try {
    const prefix = redis.globEscape(target.keyPrefix);
    for (const pattern of [`${prefix}:*`, `{${prefix}:*`])
      await connection.deleteKeys(await connection.scanKeys(pattern));
  } finally {
    await connection.close();
  }
}

interface RedisDemoCheck extends OutputCheck {
  /** Keys whose count is off, either way. */
  readonly keysWithWrongCount: number;
}

/** Reads the counts and latest values back and compares each key with what the generator produced. */
async function verifyDemoRedis(target: RedisDemoSettings, records: number, keys: number): Promise<RedisDemoCheck> {
  const redis = await loadRedisConnector();
  const connection = await redis.connectRedisReader(target.url, "demo");
  try {
    const counts = await connection.hashAll(`${target.keyPrefix}:counts`);
    const latest = await connection.strings(Array.from({ length: keys }, (_, k) => `${target.keyPrefix}:latest:${k}`));
    let committed = 0;
    let lost = 0;
    let duplicated = 0;
    let keysWithWrongCount = 0;
    let keysWithWrongLatest = 0;
    for (let k = 0; k < keys; k++) {
      // Ids 0 … records-1, key = id % keys.
      const expected = k < records ? Math.floor((records - 1 - k) / keys) + 1 : 0;
      const count = Number(counts[String(k)] ?? 0);
      committed += Math.min(count, expected);
      lost += Math.max(0, expected - count);
      duplicated += Math.max(0, count - expected);
      if (count !== expected) keysWithWrongCount++;
      if (Number(latest[k] ?? 0) !== expected) keysWithWrongLatest++;
    }
    const phantom = Object.keys(counts).filter((field) => !/^\d+$/.test(field) || Number(field) >= keys).length;
    return {
      committed,
      lost,
      duplicated,
      phantom,
      // A key's latest seq is its keyed state's last count: wrong if the state was replayed
      // wrongly, or if a replayed upsert moved the value back.
      keysWithBadSequence: keysWithWrongLatest,
      files: 0,
      keysWithWrongCount,
    };
  } finally {
    await connection.close();
  }
}
