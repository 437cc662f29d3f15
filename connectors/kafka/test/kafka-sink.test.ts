// KafkaSink against the real broker: a job writes every id exactly once as a read_committed
// consumer sees it and leaves no transaction open; the startup checks refuse a transaction
// timeout above the broker maximum or below the checkpoint timing, and a shared prefix.

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigurationError, DeliveryGuarantee, GeneratorSource, StreamJob, silentLogger } from "@exactly/core";
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { idCounts, uniqueName } from "@exactly/testkit/ids";
import { sinkContext } from "@exactly/testkit/sink-context";
import { describe, expect, it } from "vitest";
import { KafkaTransactionalSink, kafkaSink } from "../src/index.ts";
import { createTopic, exactlyOnceReport, newKafka, partitionEnds, readCommitted, writeIds } from "./helpers.ts";

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e: unknown) => e,
  );
}

const runJob = (topic: string, guarantee: DeliveryGuarantee, records: number) =>
  writeIds(topic, records, { guarantee, transactionalIdPrefix: uniqueName("e2e") });

describe("KafkaSink", () => {
  it.each([DeliveryGuarantee.EXACTLY_ONCE, DeliveryGuarantee.AT_LEAST_ONCE])(
    "writes every record of a job once at %s, visible to read_committed readers",
    async (guarantee) => {
      const kafka = newKafka(kafkaBrokers());
      const topic = uniqueName("sink-e2e");
      await createTopic(kafka, topic, 3);
      const records = 5000;
      await runJob(topic, guarantee, records);
      const report = exactlyOnceReport(idCounts(await readCommitted(topic, 3)), records);
      expect(report.lost.length, `lost, first: ${report.lost.slice(0, 5)}`).toBe(0);
      // Without a crash, at least once also writes each record once.
      expect(report.duplicated.length, `duplicated, first: ${report.duplicated.slice(0, 5)}`).toBe(0);
      expect(report.phantom).toEqual([]);
      for (const end of await partitionEnds(topic, 3)) expect(end.lastStableOffset).toBe(end.highWatermark);
    },
  );

  it("I7: refuses a transaction timeout above the broker's transaction.max.timeout.ms", async () => {
    const sink = new KafkaTransactionalSink({
      brokers: kafkaBrokers(),
      topic: "unused",
      transactionalIdPrefix: uniqueName("too-long"),
      transactionTimeoutMs: 3_600_000,
    });
    const error = await rejection(sink.open(sinkContext("too-long")));
    await sink.close();
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("transactionTimeoutMs");
    expect((error as Error).message).toContain("transaction.max.timeout.ms");
  });

  it("I7: refuses a transaction timeout below checkpoint interval + timeout + restart delay", () => {
    const make = () =>
      new KafkaTransactionalSink({
        brokers: kafkaBrokers(),
        topic: "unused",
        transactionalIdPrefix: uniqueName("too-short"),
        transactionTimeoutMs: 30_000,
        checkpointTiming: { intervalMs: 10_000, timeoutMs: 60_000, restartDelayMs: 10_000 },
      });
    expect(make).toThrow(ConfigurationError);
    try {
      make();
    } catch (error) {
      expect((error as ConfigurationError).setting).toBe("transactionTimeoutMs");
      expect((error as Error).message).toContain("checkpoint timeout");
    }
  });

  it("I7: refuses to start a job whose own checkpoint timing outlasts the transaction timeout", async () => {
    const kafka = newKafka(kafkaBrokers());
    const topic = uniqueName("job-timing");
    await createTopic(kafka, topic, 1);
    const job = new StreamJob({
      name: "job-timing",
      checkpoint: {
        storage: await mkdtemp(join(tmpdir(), "exactly-kafka-timing-")),
        intervalMs: 20_000,
        timeoutMs: 30_000,
      },
      logger: silentLogger,
    });
    job.fromSource(new GeneratorSource({ count: 10, generate: (id) => ({ id }) })).sinkTo(
      kafkaSink<{ id: number }>({
        brokers: kafkaBrokers(),
        topic,
        transactionalIdPrefix: uniqueName("job-timing"),
        transactionTimeoutMs: 45_000,
        serializer: (r) => ({ key: String(r.id), value: JSON.stringify(r) }),
      }),
      { name: "kafka" },
    );
    const error = await job.execute().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("transactionTimeoutMs");
    expect((error as Error).message).toContain("checkpoint interval 20000 ms + checkpoint timeout 30000 ms");
    expect(await readCommitted(topic, 1)).toEqual([]);
  });

  it("I7: refuses to start a sharded job whose lease duration, added to its checkpoint timing, outlasts the transaction timeout (the takeover budget)", async () => {
    const kafka = newKafka(kafkaBrokers());
    const topic = uniqueName("takeover");
    await createTopic(kafka, topic, 1);
    const job = new StreamJob({
      name: "takeover",
      checkpoint: {
        storage: await mkdtemp(join(tmpdir(), "exactly-kafka-takeover-")),
        intervalMs: 1000,
        timeoutMs: 2000,
      },
      restart: { maxDelayMs: 1000 },
      shard: { index: 0, count: 1 },
      lease: { durationMs: 30_000 },
      logger: silentLogger,
    });
    job.fromSource(new GeneratorSource({ count: 10, generate: (id) => ({ id }) })).sinkTo(
      kafkaSink<{ id: number }>({
        brokers: kafkaBrokers(),
        topic,
        transactionalIdPrefix: uniqueName("takeover"),
        transactionTimeoutMs: 20_000,
        serializer: (r) => ({ key: String(r.id), value: JSON.stringify(r) }),
      }),
      { name: "kafka" },
    );
    const error = await job.execute().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("transactionTimeoutMs");
    expect((error as Error).message).toContain("shard lease duration 30000 ms (lease.durationMs");
    expect(await readCommitted(topic, 1)).toEqual([]);
  });

  it("I7: requires an explicit transaction timeout and prefix at EXACTLY_ONCE", () => {
    const settingOf = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        return (error as ConfigurationError).setting;
      }
      return undefined;
    };
    expect(
      settingOf(() => new KafkaTransactionalSink({ brokers: kafkaBrokers(), topic: "t", transactionalIdPrefix: "p" })),
    ).toBe("transactionTimeoutMs");
    expect(
      settingOf(
        () => new KafkaTransactionalSink({ brokers: kafkaBrokers(), topic: "t", transactionTimeoutMs: 60_000 }),
      ),
    ).toBe("transactionalIdPrefix");
  });

  it("I7: refuses a second sink with the same transactionalIdPrefix in one process", async () => {
    const prefix = uniqueName("shared");
    const options = {
      brokers: kafkaBrokers(),
      topic: "unused",
      transactionalIdPrefix: prefix,
      transactionTimeoutMs: 60_000,
    };
    const first = new KafkaTransactionalSink(options);
    const second = new KafkaTransactionalSink(options);
    await first.open(sinkContext("first"));
    const error = await rejection(second.open(sinkContext("second")));
    await second.close();
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("transactionalIdPrefix");
    await first.close();
    // Once the first sink closed, the prefix is free again (a restart in the same process).
    const third = new KafkaTransactionalSink(options);
    await third.open(sinkContext("second"));
    await third.close();
  });
});
