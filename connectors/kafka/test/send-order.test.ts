// The Kafka sinks keep the order of their sends within every partition with sends in flight
// (maxInFlightSends 2, the default). A client that assigns a send's sequence numbers only after
// its own awaits (the topic's metadata, the broker, AddPartitionsToTxn) lets a later send that
// skips one of them overtake an earlier one: a transaction's first sends add their partitions
// to it, and a topic new to the producer adds a metadata refresh. Here every
// key's records carry a counter in the order the job wrote them, and a reader must see each
// key's counters strictly increasing (a key lives on one partition). Then a send is retried:
// its Produce request's connection is cut right after the broker got it, while the next send
// waits to make its own; the retry must land before the next send, and once.

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeliveryGuarantee, GeneratorSource, StreamJob, silentLogger } from "@exactly/core";
import { kafkaBrokers, kafkaProxiedListener } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import { startTcpProxy } from "@exactly/testkit/tcp-proxy";
import { describe, expect, it } from "vitest";
import { kafkaSink } from "../src/index.ts";
import { createTopic, newKafka, readCommitted } from "./helpers.ts";

const KEYS = 8;
const PARTITIONS = 4;
const RECORDS = 4000;

/** Kafka's API key of Produce. */
const PRODUCE = 0;

/** Whether a client → broker chunk starts with a Produce request (size, then API key). */
function startsProduce(chunk: Buffer): boolean {
  return chunk.length >= 6 && chunk.readInt16BE(4) === PRODUCE;
}

/** Each key's counters in the order a reader sees them, and the keys whose counters go back. */
function outOfOrder(values: readonly string[]): { keys: string[]; seen: number } {
  const last = new Map<string, number>();
  const keys = new Set<string>();
  for (const value of values) {
    const [key, counter] = value.split(":") as [string, string];
    const n = Number(counter);
    if ((last.get(key) ?? -1) >= n) keys.add(key);
    last.set(key, n);
  }
  return { keys: [...keys], seen: values.length };
}

async function runJob(
  topic: string,
  guarantee: DeliveryGuarantee,
  options: { brokers?: string[]; maxRestarts?: number } = {},
): Promise<void> {
  const job = new StreamJob({
    name: uniqueName("send-order-job"),
    parallelism: 1,
    checkpoint: { storage: await mkdtemp(join(tmpdir(), "exactly-kafka-")), intervalMs: 200 },
    restart: { maxRestarts: options.maxRestarts ?? 0, initialDelayMs: 100 },
    logger: silentLogger,
    batchSize: 100,
  });
  job.fromSource(new GeneratorSource({ count: RECORDS, splits: 1, generate: (id) => id })).sinkTo(
    kafkaSink<number>({
      brokers: options.brokers ?? kafkaBrokers(),
      topic,
      guarantee,
      transactionalIdPrefix: uniqueName("send-order"),
      transactionTimeoutMs: 120_000,
      // Many small sends, two in flight (the default), so many chances to overtake.
      maxBatchRecords: 25,
      serializer: (id) => {
        const key = `key-${id % KEYS}`;
        return { key, value: `${key}:${Math.floor(id / KEYS)}` };
      },
    }),
    { name: "kafka-out" },
  );
  await job.execute();
}

describe("the Kafka sinks' sends", () => {
  it.each([DeliveryGuarantee.EXACTLY_ONCE, DeliveryGuarantee.AT_LEAST_ONCE])(
    "land in the order they were sent within every partition, two in flight, at %s",
    async (guarantee) => {
      const kafka = newKafka(kafkaBrokers());
      const topic = uniqueName("send-order");
      await createTopic(kafka, topic, PARTITIONS);
      await runJob(topic, guarantee);
      const result = outOfOrder(await readCommitted(topic, PARTITIONS));
      expect(result.seen).toBe(RECORDS);
      expect(result.keys, "keys whose records landed out of the order they were sent").toEqual([]);
    },
  );

  it("land in the order they were sent when one is retried after its connection was cut with its records at the broker", async () => {
    const kafka = newKafka(kafkaBrokers());
    const topic = uniqueName("send-order-retry");
    await createTopic(kafka, topic, PARTITIONS);
    // Bootstrapped at the proxied listener: every connection of the job goes through the proxy.
    const { advertised, upstream } = kafkaProxiedListener();
    const proxy = await startTcpProxy(upstream, advertised.port);
    try {
      // The tenth Produce request: by then the next send is ready behind it.
      let produces = 0;
      const cut = proxy.cutAfterRequest((chunk) => startsProduce(chunk) && ++produces === 10);
      // A cut may also fail a transaction's other requests; the job restarts from its checkpoint then.
      await runJob(topic, DeliveryGuarantee.EXACTLY_ONCE, {
        brokers: [`${advertised.host}:${advertised.port}`],
        maxRestarts: 5,
      });
      await cut;
      expect(proxy.cuts).toBe(1);
    } finally {
      await proxy.close();
    }
    const values = await readCommitted(topic, PARTITIONS);
    const result = outOfOrder(values);
    expect(new Set(values).size, "records written twice").toBe(values.length);
    expect(result.seen).toBe(RECORDS);
    expect(result.keys, "keys whose records landed out of the order they were sent").toEqual([]);
  });
});
