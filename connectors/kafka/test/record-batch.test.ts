// The sink's own record-batch encoder (src/protocol/record-batch.ts) against the real broker:
// what an exactly-once job writes, read back by kafkajs's read_committed consumer (its own
// decoder, not ours), is exactly what the serializer made — keys, values, headers, nulls,
// empty fields, unicode, explicit timestamps, varint boundaries and a value near the
// producer's max.request.size (1 MiB).

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GeneratorSource, StreamJob, silentLogger } from "@exactly/core";
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import type { IHeaders } from "kafkajs";
import { describe, expect, it } from "vitest";
import { type KafkaSinkMessage, kafkaSink } from "../src/index.ts";
import { createTopic, newKafka } from "./helpers.ts";

const UNICODE = "héllo wörld — 日本語 🎉 \u0000 end";

/** The messages to write, in order, one partition: every shape a field can take. */
function messages(): KafkaSinkMessage[] {
  const out: KafkaSinkMessage[] = [
    { key: "k-string", value: "v-string" },
    { key: Buffer.from([0, 1, 2, 0xfe, 0xff]), value: Buffer.from([0xff, 0, 0x80, 0x7f]) },
    { key: null, value: null },
    { key: "null-value", value: null },
    { value: "no key" },
    { key: "", value: "" },
    { key: Buffer.alloc(0), value: Buffer.alloc(0) },
    { key: UNICODE, value: UNICODE, headers: { [UNICODE]: UNICODE } },
    {
      key: "headers",
      value: "h",
      headers: { text: "one", bytes: Buffer.from([0, 0xff]), repeated: ["a", Buffer.from("b"), "c"], empty: "" },
    },
    { key: "no headers", value: "h", headers: {} },
    { key: "timestamp", value: "t", timestamp: 1_600_000_000_123 },
    { key: "earlier timestamp", value: "t", timestamp: 1_500_000_000_000 },
  ];
  // Lengths around each varint boundary (zigzag: 63/64, 8191/8192, 1048575/…).
  for (const length of [63, 64, 127, 128, 8191, 8192, 16_383, 16_384, 100_000]) {
    out.push({ key: `len-${length}`, value: Buffer.alloc(length, length % 251) });
  }
  // Enough records in one batch that offset deltas need two varint bytes.
  for (let i = 0; i < 300; i++) out.push({ key: `small-${i}`, value: `value-${i}` });
  // A value close to the producer's max.request.size (1 MiB), in a batch of its own.
  out.push({ key: "large", value: Buffer.alloc(1_024_000, 7) });
  out.push({ key: "last", value: "after the large one" });
  return out;
}

function bytes(value: Buffer | string | null | undefined): Buffer | null {
  if (value === null || value === undefined) return null;
  return Buffer.isBuffer(value) ? value : Buffer.from(value, "utf8");
}

/** The headers as a consumer sees them: every value as bytes, a repeated header as an array. */
function expectedHeaders(headers: KafkaSinkMessage["headers"]): Record<string, Buffer | Buffer[]> {
  const out: Record<string, Buffer | Buffer[]> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value.map((v) => bytes(v) as Buffer) : (bytes(value) as Buffer);
  }
  return out;
}

function seenHeaders(headers: IHeaders | undefined): Record<string, Buffer | Buffer[]> {
  const out: Record<string, Buffer | Buffer[]> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value.map((v) => bytes(v) as Buffer) : (bytes(value) as Buffer);
  }
  return out;
}

describe("the sink's record batches", () => {
  it("are read back exactly by a read_committed consumer: keys, values, headers, nulls, empties, unicode, large values", async () => {
    const brokers = kafkaBrokers();
    const kafka = newKafka(brokers);
    const topic = uniqueName("record-batch");
    await createTopic(kafka, topic, 1);
    const written = messages();
    const job = new StreamJob({
      name: uniqueName("record-batch-job"),
      parallelism: 1,
      checkpoint: { storage: await mkdtemp(join(tmpdir(), "exactly-kafka-")), intervalMs: 200 },
      restart: { maxRestarts: 0 },
      logger: silentLogger,
      batchSize: 100,
    });
    job.fromSource(new GeneratorSource({ count: written.length, splits: 1, generate: (id) => id })).sinkTo(
      kafkaSink<number>({
        brokers,
        topic,
        transactionalIdPrefix: uniqueName("record-batch"),
        transactionTimeoutMs: 120_000,
        // Several batches, one of them holding only the large value, two in flight (the
        // default): the records are compared in order, which the sink keeps.
        maxBatchRecords: 150,
        serializer: (id) => ({ ...(written[id] as KafkaSinkMessage), partition: 0 }),
      }),
      { name: "kafka-out" },
    );
    await job.execute();

    const consumer = kafka.consumer({
      groupId: uniqueName("record-batch-reader"),
      readUncommitted: false,
      maxBytesPerPartition: 2 * 1024 * 1024,
    });
    await consumer.connect();
    const seen: Array<{ key: Buffer | null; value: Buffer | null; headers: IHeaders | undefined; timestamp: string }> =
      [];
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        consumer
          .run({
            eachMessage: async ({ message }) => {
              seen.push({
                key: message.key,
                value: message.value,
                headers: message.headers,
                timestamp: message.timestamp,
              });
              if (seen.length >= written.length) resolve();
            },
          })
          .catch(reject);
      });
    } finally {
      await consumer.disconnect();
    }

    expect(seen.length).toBe(written.length);
    for (let i = 0; i < written.length; i++) {
      const want = written[i] as KafkaSinkMessage;
      const got = seen[i] as (typeof seen)[number];
      const what = `record ${i} (key ${String(want.key).slice(0, 20)})`;
      expect(got.key, what).toEqual(bytes(want.key));
      expect(got.value, what).toEqual(bytes(want.value));
      expect(seenHeaders(got.headers), what).toEqual(expectedHeaders(want.headers));
      if (want.timestamp !== undefined) expect(got.timestamp, what).toBe(String(want.timestamp));
    }
  });
});
