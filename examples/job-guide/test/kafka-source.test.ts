// Runs the Kafka source job of docs/writing-a-job.md against the test Kafka broker: a topic of
// clicks with their event times as Kafka timestamps, read to its end, counted per user and
// minute. Every window must hold exactly the clicks a batch computation puts there.
import { mkdtemp, readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadJob, silentLogger, type WindowResult } from "@exactly/core";
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import kafkajs from "kafkajs";
import { describe, expect, it } from "vitest";

const CLICKS = 600;
const USERS = ["ada", "grace", "linus", "margaret", "ken"];
const START = 1_767_225_600_000; // 2026-01-01T00:00:00Z, a whole minute
/** Click i: a user in turn, one every second of event time, so 600 clicks span 10 minutes. */
const click = (i: number) => ({ user: USERS[i % USERS.length] as string, page: `/p/${i % 7}`, at: START + i * 1000 });

describe("docs/writing-a-job.md: the Kafka source", () => {
  it("reads every committed record of the topic once: clicks per user and minute as a batch computation counts them", async () => {
    const brokers = kafkaBrokers();
    const topic = uniqueName("job-guide-clicks");
    const kafka = new kafkajs.Kafka({ clientId: "job-guide-test", brokers, logLevel: kafkajs.logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });
    } finally {
      await admin.disconnect();
    }
    const producer = kafka.producer({ idempotent: true });
    await producer.connect();
    try {
      const messages = Array.from({ length: CLICKS }, (_, i) => {
        const { user, page, at } = click(i);
        // The event time travels as the record's Kafka timestamp; a user's clicks share a partition.
        return { key: user, value: JSON.stringify({ user, page }), timestamp: String(at) };
      });
      await producer.send({ topic, acks: -1, messages });
    } finally {
      await producer.disconnect();
    }

    const dir = await mkdtemp(join(tmpdir(), "exactly-job-guide-kafka-"));
    const job = await loadJob(new URL("../src/kafka-clicks-job.ts", import.meta.url), {
      params: { dir, brokers, topic, bounded: true, workers: 1 },
      runtime: { logger: silentLogger },
    });
    await job.execute();

    const expected = new Map<string, number>();
    for (let i = 0; i < CLICKS; i++) {
      const { user, at } = click(i);
      const slot = `${user}@${at - (at % 60_000)}`;
      expected.set(slot, (expected.get(slot) ?? 0) + 1);
    }
    const actual = new Map<string, number>();
    const out = join(dir, "clicks-per-minute");
    for (const name of await readdir(out)) {
      if (name.startsWith(".")) continue;
      for (const line of (await readFile(join(out, name), "utf8")).split("\n")) {
        if (!line) continue;
        const w = JSON.parse(line) as WindowResult<string, number>;
        const slot = `${w.key}@${w.start}`;
        expect(actual.has(slot), `window ${slot} written twice`).toBe(false);
        actual.set(slot, w.value);
      }
    }
    expect(expected.size).toBe(50); // 5 users × 10 minutes, 12 clicks each
    expect(actual).toEqual(expected);
  });
});
