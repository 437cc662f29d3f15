// The sharded window sum against the real broker: 2 shards before the repartition topic and 3
// after, SIGKILLs in both groups, a zombie in each, and the group after rescaled from 3 shards
// to 2 in the middle; every window once, with the sum and count of a batch computation.

import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { describe, expect, it } from "vitest";
import { runShardedWindowSum } from "../src/index.ts";

describe("sharded window sum: a keyBy across shards through a repartition topic", () => {
  it("is exactly once under kills and zombies in both groups, with the group after rescaled 3 → 2", async () => {
    const lines: string[] = [];
    const result = await runShardedWindowSum({
      brokers: kafkaBrokers(),
      clicks: 120_000,
      ratePerSecond: 20_000,
      kills: 2,
      seed: 7,
      log: (line) => lines.push(line),
    });
    expect(result.mismatches.slice(0, 10), lines.join("\n")).toEqual([]);
    expect(result.windows).toBeGreaterThan(100);
    expect(result.kills, lines.join("\n")).toEqual({ upstream: 1, downstream: 1 });
    expect(result.zombies.upstream.fenced, lines.join("\n")).toBe(true);
    expect(result.zombies.downstream.fenced, lines.join("\n")).toBe(true);
    expect(result.rescaled).toEqual({ from: 3, to: 2 });
  });
});
