// kcat, the second reader of the example's output: read whole however long the topic is
// (its output was once cut at 1 MiB), and a run of kcat that failed is never taken for a check.

import { randomUUID } from "node:crypto";
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import kafkajs from "kafkajs";
import { describe, expect, it } from "vitest";
import { readCommittedWithKcat } from "../src/read-committed.ts";

describe("reading the output with kcat", () => {
  it("reads every committed value of a topic whose output passes 1 MiB", async () => {
    const kafka = new kafkajs.Kafka({ brokers: kafkaBrokers(), logLevel: kafkajs.logLevel.NOTHING });
    const topic = `kcat-long-${randomUUID().slice(0, 8)}`;
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
    await admin.disconnect();
    const producer = kafka.producer({ idempotent: true });
    await producer.connect();
    const values = Array.from({ length: 30_000 }, (_, i) => JSON.stringify({ i, pad: "x".repeat(80) }));
    for (let start = 0; start < values.length; start += 5000) {
      const messages = values.slice(start, start + 5000).map((value) => ({ value }));
      await producer.send({ topic, acks: -1, messages });
    }
    await producer.disconnect();
    expect(values.join("\n").length).toBeGreaterThan(2 * 1024 * 1024);

    const read = await readCommittedWithKcat(kafkaBrokers(), topic);
    expect(read.status).toBe("read");
    const got = read.status === "read" ? read.values : [];
    expect(got.length).toBe(values.length);
    expect(new Set(got)).toEqual(new Set(values));
  });

  it("a kcat that ran and failed is a failed check, with its error", async () => {
    const read = await readCommittedWithKcat(kafkaBrokers(), `no-such-topic-${randomUUID().slice(0, 8)}`);
    expect(read.status).toBe("failed");
    expect(read.status === "failed" && read.reason).toMatch(/kcat exited with 1: .*Unknown topic/);
  });
});
