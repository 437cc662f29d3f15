// `exactly demo --sink redis` against the real server: under SIGKILL the write-ahead sink's
// HINCRBY counts come out exact for every key and the upsert sink's latest seq is each key's
// record count; at least once, with kills, the plain pipelined increments count extra.

import { redisUrl } from "@exactly/testkit/endpoints";
import { runExactly } from "@exactly/testkit/run-cli";
import { afterEach, describe, expect, it, vi } from "vitest";
import { deleteUnder, freshPrefix, withRedis } from "../../../../../connectors/redis/test/helpers.ts";

const demo = (keyPrefix: string, ...args: string[]) =>
  runExactly(
    "demo",
    "--sink",
    "redis",
    "--redis-url",
    redisUrl(),
    "--key-prefix",
    keyPrefix,
    "--records",
    "30000",
    "--kills",
    "2",
    "--seed",
    "11",
    "--json",
    ...args,
  );

describe("exactly demo --sink redis", () => {
  const prefixes: string[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
    for (const prefix of prefixes.splice(0)) {
      await deleteUnder(redisUrl(), prefix);
      await deleteUnder(redisUrl(), `{${prefix}`);
    }
  });

  const prefixFor = (label: string) => {
    const prefix = freshPrefix(label).replace(/:$/, "");
    prefixes.push(prefix);
    return prefix;
  };

  it("exactly once: every key's count exact and its latest seq its record count, under kills", async () => {
    const prefix = prefixFor("demo-eo");
    // Left by an earlier run under the same prefix: cleared at start, not counted.
    await withRedis(redisUrl(), (c) => c.hset(`${prefix}:counts`, "7", "1000"));
    const summary = JSON.parse((await demo(prefix)).at(-1) as string);
    expect(summary).toMatchObject({
      sink: "redis",
      keyPrefix: prefix,
      records: 30_000,
      committed: 30_000,
      lost: 0,
      duplicated: 0,
      phantom: 0,
      keysWithBadSequence: 0,
      keysWithWrongCount: 0,
      kills: 2,
      ok: true,
    });
    expect(process.exitCode).toBeUndefined();
    // What the demo read is what another client sees.
    const counts = await withRedis(redisUrl(), (c) => c.hgetall(`${prefix}:counts`));
    expect(Object.keys(counts)).toHaveLength(1024);
    expect(Object.values(counts).reduce((sum, n) => sum + Number(n), 0)).toBe(30_000);
  });

  it("at least once with kills counts extra, and says so", async () => {
    const prefix = prefixFor("demo-alo");
    const printed = await demo(prefix, "--guarantee", "at-least-once", "--records", "300000", "--kills", "5");
    const summary = JSON.parse(printed.at(-1) as string);
    expect(summary).toMatchObject({ records: 300_000, lost: 0, ok: false });
    expect(summary.duplicated).toBeGreaterThan(0);
    expect(summary.keysWithWrongCount).toBeGreaterThan(0);
    // The upsert sink is idempotent whatever the guarantee: the latest values stay right.
    expect(summary.keysWithBadSequence).toBe(0);
    expect(process.exitCode).toBe(1);
  });

  it("refuses a key prefix the demo could not clear safely", async () => {
    await expect(demo("")).rejects.toThrow("--key-prefix");
    await expect(demo("a*b")).rejects.toThrow("--key-prefix");
  });
});
