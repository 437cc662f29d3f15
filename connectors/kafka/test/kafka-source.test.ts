// KafkaSource against the real broker: it reads only committed records (an aborted
// transaction in the input is skipped), resumes from the offsets in the checkpoint after a
// SIGKILL (Kafka in → Kafka out stays exactly once), and commits offsets to its group.

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigurationError, StreamJob, silentLogger } from "@exactly/core";
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { idCounts, uniqueName } from "@exactly/testkit/ids";
import { describe, expect, it } from "vitest";
import { MemorySink, MemoryStore } from "../../../packages/core/test/helpers.ts";
import { KafkaSource } from "../src/index.ts";
import { openKafkaConnection } from "../src/open-connection.ts";
import { createTopic, exactlyOnceReport, newKafka, readCommitted, runFixture } from "./helpers.ts";

const job = fileURLToPath(new URL("./fixtures/source-job.ts", import.meta.url));
const RECORDS = 12_000;
const PARTITIONS = 3;

describe("KafkaSource", () => {
  it.each([["mid-write@5"], ["after-pre-commit@2"], ["after-checkpoint-durable@2"]])(
    "resumes from checkpointed offsets after SIGKILL at %s and never reads aborted records",
    async (fault) => {
      const kafka = newKafka(kafkaBrokers());
      const input = uniqueName("source-in");
      const output = uniqueName("source-out");
      await createTopic(kafka, input, PARTITIONS);
      await createTopic(kafka, output, 2);
      // Input: ids 0…RECORDS−1 committed, with an aborted transaction of phantom ids in between.
      const producer = kafka.producer({ allowAutoTopicCreation: false });
      await producer.connect();
      const half = RECORDS / 2;
      const send = (from: number, to: number) =>
        producer.send({
          topic: input,
          acks: -1,
          messages: Array.from({ length: to - from }, (_, i) => ({
            key: String(from + i),
            value: JSON.stringify({ id: from + i }),
          })),
        });
      await send(0, half);
      const connection = openKafkaConnection({ brokers: kafkaBrokers() });
      await connection.connect();
      const aborted = await connection.beginTransaction({
        transactionalId: uniqueName("aborted-in"),
        transactionTimeoutMs: 120_000,
      });
      for (let p = 0; p < PARTITIONS; p++) {
        await aborted.sendBatch([
          { topic: input, messages: [{ partition: p, value: JSON.stringify({ id: -1 - p }) }] },
        ]);
      }
      await connection.endTransaction(aborted, false);
      await connection.close();
      await send(half, RECORDS);
      await producer.disconnect();

      const env = {
        CRASH_BROKERS: kafkaBrokers().join(","),
        CRASH_IN: input,
        CRASH_OUT: output,
        CRASH_GROUP: uniqueName("group"),
        CRASH_PREFIX: uniqueName("source-crash"),
        CRASH_CHECKPOINTS: await mkdtemp(join(tmpdir(), "exactly-kafka-source-")),
      };
      const crashed = await runFixture(job, { ...env, EXACTLY_FAULT: fault });
      expect(crashed.signal, crashed.stderr).toBe("SIGKILL");
      const last = await runFixture(job, env);
      expect(last.code, last.stderr).toBe(0);

      const report = exactlyOnceReport(idCounts(await readCommitted(output, 2)), RECORDS);
      expect(report.phantom, "records of the aborted input transaction were read").toEqual([]);
      expect(report.lost.length, `lost, first: ${report.lost.slice(0, 5)}`).toBe(0);
      expect(report.duplicated.length, `duplicated, first: ${report.duplicated.slice(0, 5)}`).toBe(0);

      // Offsets went to the group after checkpoints completed (for monitoring).
      const admin = kafka.admin();
      await admin.connect();
      const committed = await admin.fetchOffsets({ groupId: env.CRASH_GROUP, topics: [input] });
      await admin.disconnect();
      const total = committed[0]?.partitions.reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0) ?? 0;
      expect(total).toBeGreaterThan(0);
    },
  );

  it("fails a job whose input topic does not exist at once, naming topics and the topic (a restart would not create it)", async () => {
    const kafka = newKafka(kafkaBrokers());
    const present = uniqueName("source-present");
    await createTopic(kafka, present, 1);
    const missing = uniqueName("source-missing");
    const job = new StreamJob({
      name: uniqueName("missing-topic"),
      checkpoint: { storage: await mkdtemp(join(tmpdir(), "exactly-kafka-missing-")), intervalMs: 100 },
      restart: { maxRestarts: 5, initialDelayMs: 100 },
      logger: silentLogger,
    });
    const store = new MemoryStore();
    job
      .fromSource(new KafkaSource({ brokers: kafkaBrokers(), topics: [present, missing] }))
      .sinkTo(() => new MemorySink(store), { name: "out" });
    const error = await job.execute().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("topics");
    expect((error as Error).message).toBe(`topics: the cluster has no topic ${missing}`);
  });

  it("stops each partition at the offset stopAtOffsets gives, however much is written after, and refuses a partition it does not name", async () => {
    const kafka = newKafka(kafkaBrokers());
    const topic = uniqueName("source-stop-at");
    await createTopic(kafka, topic, 2);
    const producer = kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    const write = (partition: number, from: number, to: number) =>
      producer.send({
        topic,
        acks: -1,
        messages: Array.from({ length: to - from }, (_, i) => ({ partition, value: String(from + i) })),
      });
    try {
      await write(0, 0, 10);
      await write(1, 100, 105);
      const read = async (stopAtOffsets: Record<string, number>) => {
        const store = new MemoryStore();
        const job = new StreamJob({
          name: uniqueName("stop-at"),
          checkpoint: { storage: await mkdtemp(join(tmpdir(), "exactly-kafka-stop-at-")), intervalMs: 100 },
          logger: silentLogger,
        });
        job
          .fromSource(
            new KafkaSource({
              brokers: kafkaBrokers(),
              topics: [topic],
              stopAtOffsets,
              deserializer: (r) => String(r.value),
            }),
          )
          .sinkTo(() => new MemorySink<string>(store), { name: "out" });
        await job.execute();
        return (store.committed as string[]).map(Number).sort((a, b) => a - b);
      };
      // Ends past what is written: the reader waits for the rest, written while it runs.
      const waiting = read({ [`${topic}:0`]: 12, [`${topic}:1`]: 3 });
      await new Promise((resolve) => setTimeout(resolve, 500));
      await write(0, 10, 20);
      expect(await waiting).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 100, 101, 102]);
      const refused = await read({ [`${topic}:0`]: 1 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((refused as ConfigurationError).setting).toBe("stopAtOffsets");
      expect(String(refused)).toContain(`names no offset for ${topic}:1`);
    } finally {
      await producer.disconnect();
    }
  });
});
