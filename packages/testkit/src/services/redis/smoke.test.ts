// Smoke test of the Redis service: server-side Lua by SHA, as the Redis sinks use it. A guarded
// upsert (apply only a newer version) is loaded once with SCRIPT LOAD and run with EVALSHA.

import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { redisUrl } from "../endpoints.ts";

const GUARDED_UPSERT = `
local current = redis.call('HGET', KEYS[1], 'version')
if current and tonumber(current) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'value', ARGV[2])
return 1
`;

describe("Redis service", () => {
  // One hash tag for the test's keys, as the sinks do (Cluster-safe multi-key calls).
  const key = `{smoke-${randomUUID().slice(0, 8)}}:record`;
  // Connected inside the test, not in a hook: without an endpoint the test itself fails (a
  // failing beforeAll would only mark it skipped).
  let client: Redis | undefined;

  afterAll(async () => {
    const redis = client;
    if (!redis) return;
    await redis.del(key);
    await redis.quit();
  });

  it("runs a loaded script by SHA with KEYS and ARGV", async () => {
    const redis = new Redis(redisUrl(), { maxRetriesPerRequest: 1 });
    client = redis;
    const sha = (await redis.script("LOAD", GUARDED_UPSERT)) as string;
    expect(sha).toMatch(/^[0-9a-f]{40}$/);
    expect(await redis.script("EXISTS", sha)).toEqual([1]);

    expect(await redis.evalsha(sha, 1, key, "2", "second")).toBe(1);
    // An older version never moves the key back.
    expect(await redis.evalsha(sha, 1, key, "1", "first")).toBe(0);
    expect(await redis.evalsha(sha, 1, key, "3", "third")).toBe(1);
    expect(await redis.hgetall(key)).toEqual({ version: "3", value: "third" });

    await expect(redis.evalsha("0".repeat(40), 1, key, "4", "x")).rejects.toThrow(/NOSCRIPT/);
  });
});
