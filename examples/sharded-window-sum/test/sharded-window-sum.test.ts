// The sharded window sum against the real broker: 2 shards before the repartition topic and 3
// after, SIGKILLs in both groups, a zombie in each, the group before rescaled to 3 shards (a new
// set of writers of the topic's watermarks) and the group after to 2; every window once, with the sum and count of a batch computation. The
// repartition topic, read by Kafka's own console consumer (Java, read_committed), holds every
// click once, under its user's key, in its key group's partition.

import { spawn } from "node:child_process";
import { keyGroupOf } from "@exactly/core/internal";
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { kafkaTools } from "@exactly/testkit/kafka/tools";
import { describe, expect, it } from "vitest";
import { type Click, click, REPARTITION_PARTITIONS, runShardedWindowSum } from "../src/index.ts";

const CLICKS = 120_000;

/** Every record of `topic` as Kafka's ConsoleConsumer prints it read_committed: partition, headers, key, value. */
async function consoleConsumer(topic: string): Promise<string[]> {
  const tools = await kafkaTools();
  const child = spawn(
    tools.java,
    [
      "-Xmx256m",
      "-cp",
      tools.classpath,
      "org.apache.kafka.tools.consumer.ConsoleConsumer",
      "--bootstrap-server",
      kafkaBrokers().join(","),
      "--topic",
      topic,
      "--from-beginning",
      "--isolation-level",
      "read_committed",
      "--timeout-ms",
      "10000",
      "--property",
      "print.partition=true",
      "--property",
      "print.headers=true",
      "--property",
      "print.key=true",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  await new Promise((resolve) => child.on("close", resolve));
  // It ends at its --timeout-ms with a TimeoutException it reports and exits 0 or 1 for, by version.
  if (!stderr.includes("Processed a total of")) throw new Error(`ConsoleConsumer did not finish: ${stderr}`);
  // Its own log lines go to stdout too: a record's line begins with its partition.
  return out.split("\n").filter((line) => line.startsWith("Partition:"));
}

describe("sharded window sum: a keyBy across shards through a repartition topic", () => {
  it("is exactly once under kills and zombies in both groups, each group rescaled in the middle (2 → 3 before, 3 → 2 after)", async () => {
    const lines: string[] = [];
    const result = await runShardedWindowSum({
      brokers: kafkaBrokers(),
      clicks: CLICKS,
      ratePerSecond: 20_000,
      kills: 2,
      seed: 7,
      keepRepartitionTopic: true,
      log: (line) => lines.push(line),
    });
    expect(result.mismatches.slice(0, 10), lines.join("\n")).toEqual([]);
    expect(result.windows).toBeGreaterThan(100);
    expect(result.kills, lines.join("\n")).toEqual({ upstream: 1, downstream: 1 });
    expect(result.zombies.upstream.fenced, lines.join("\n")).toBe(true);
    expect(result.zombies.downstream.fenced, lines.join("\n")).toBe(true);
    expect(result.rescaled).toEqual({ upstream: { from: 2, to: 3 }, downstream: { from: 3, to: 2 } });

    // The topic as another tool reads it: "Partition:p<TAB>headers<TAB>key<TAB>value".
    const seen = new Map<number, number>();
    let markers = 0;
    for (const line of await consoleConsumer(result.topics.repartition)) {
      const [partition, headers, key, value] = line.split("\t");
      if (headers?.includes("exactly-watermark")) {
        markers++;
        continue;
      }
      const c = JSON.parse(value as string) as Click;
      expect(c).toEqual(click(c.id));
      expect(key).toBe(c.user);
      const group = keyGroupOf(c.user, 128);
      expect(partition).toBe(`Partition:${Math.floor((group * REPARTITION_PARTITIONS) / 128)}`);
      seen.set(c.id, (seen.get(c.id) ?? 0) + 1);
    }
    const twice = [...seen].filter(([, n]) => n > 1).map(([id]) => id);
    const missing = Array.from({ length: CLICKS }, (_v, id) => id).filter((id) => !seen.has(id));
    expect({ ids: seen.size, twice: twice.slice(0, 5), missing: missing.slice(0, 5), markers: markers > 0 }).toEqual({
      ids: CLICKS,
      twice: [],
      missing: [],
      markers: true,
    });
  });
});
