// The source's own Fetch response decoder (src/protocol/fetch-response.ts) against kafkajs's,
// on the same bytes from the real broker: every shape a record can take (keys, values and
// headers null, empty, repeated, unicode; explicit and log-append timestamps), a GZIP batch
// (through node:zlib), an aborted and a committed transaction (control records, the
// aborted list), several batches and a fetch that starts inside a batch. A batch whose bytes
// no longer match its CRC32C is refused, never read.

import { gunzipSync } from "node:zlib";
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import kafkajs, { CompressionTypes, type Kafka, type Message } from "kafkajs";
import { describe, expect, it } from "vitest";
import { createCluster, type InternalBroker } from "../src/kafkajs/cluster.ts";
import { internals, requireInternal } from "../src/kafkajs/load.ts";
import { CorruptRecordBatchError, decodeFetchResponse } from "../src/protocol/fetch-response.ts";
import { createTopic, newKafka, readCommitted } from "./helpers.ts";

const UNICODE = "héllo wörld — 日本語 🎉 \u0000 end";

function shapes(): Message[] {
  return [
    { key: "k-string", value: "v-string" },
    { key: Buffer.from([0, 1, 2, 0xfe, 0xff]), value: Buffer.from([0xff, 0, 0x80, 0x7f]) },
    { key: null, value: null },
    { value: "no key" },
    { key: "", value: "" },
    { key: UNICODE, value: UNICODE, headers: { [UNICODE]: UNICODE } },
    { key: "headers", value: "h", headers: { text: "one", bytes: Buffer.from([0, 0xff]), repeated: ["a", "b", "c"] } },
    { key: "timestamp", value: "t", timestamp: "1600000000123" },
    { key: "earlier timestamp", value: "t", timestamp: "1500000000000" },
    { key: "long", value: Buffer.alloc(20_000, 3) },
  ];
}

interface Captured {
  version: number;
  raw: Buffer;
  decode(raw: Buffer): Promise<unknown>;
}

type Factory = (args: unknown) => {
  request: { apiVersion: number };
  response: { decode(raw: Buffer): Promise<unknown>; parse(data: unknown): Promise<unknown> };
};

/** kafkajs's Broker#fetch on `broker`, keeping each raw response and kafkajs's own decoder of its version. */
async function fetchRaw(broker: InternalBroker, topic: string, fetchOffset = "0"): Promise<Captured[]> {
  const captured: Captured[] = [];
  const Broker = requireInternal("src/broker/index.js") as {
    prototype: { fetch: (args: unknown) => Promise<unknown> };
  };
  const lookupRequest = (broker as unknown as { lookupRequest(k: number, d: unknown): Factory }).lookupRequest;
  const view = new Proxy(broker, {
    get(object, property) {
      if (property === "lookupRequest") {
        return (apiKey: number, definition: unknown): Factory => {
          const make = lookupRequest.call(object, apiKey, definition);
          return (args) => {
            const built = make(args);
            const decode = built.response.decode;
            return {
              ...built,
              response: {
                ...built.response,
                decode: async (raw: Buffer) => {
                  captured.push({ version: built.request.apiVersion, raw: Buffer.from(raw), decode });
                  return decode(raw);
                },
              },
            };
          };
        };
      }
      const value = Reflect.get(object, property, object);
      return typeof value === "function" ? value.bind(object) : value;
    },
  });
  await Broker.prototype.fetch.call(view, {
    isolationLevel: internals.READ_COMMITTED,
    maxWaitTime: 0,
    minBytes: 1,
    maxBytes: 4 * 1024 * 1024,
    topics: [{ topic, partitions: [{ partition: 0, fetchOffset, maxBytes: 4 * 1024 * 1024 }] }],
  });
  return captured;
}

async function leaderOf(kafka: Kafka, topic: string) {
  const cluster = createCluster(kafka);
  await cluster.connect();
  await cluster.addMultipleTargetTopics([topic]);
  const leader = Object.keys(cluster.findLeaderForPartitions(topic, [0]))[0] as string;
  return { cluster, broker: await cluster.findBroker({ nodeId: leader }) };
}

/** Every shape in `topic`, uncompressed (decoded here) unless `gzip` (a GZIP batch: the record set goes to kafkajs). */
async function writeEveryShape(kafka: Kafka, topic: string, options: { gzip?: boolean } = {}): Promise<void> {
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  try {
    await producer.send({ topic, messages: shapes().map((m) => ({ ...m, partition: 0 })) });
    await producer.send({
      topic,
      ...(options.gzip ? { compression: CompressionTypes.GZIP } : {}),
      messages: shapes().map((m) => ({ ...m, partition: 0 })),
    });
  } finally {
    await producer.disconnect();
  }
  const transactional = kafka.producer({ transactionalId: uniqueName("fetch-decode"), maxInFlightRequests: 1 });
  await transactional.connect();
  try {
    const aborted = await transactional.transaction();
    await aborted.send({ topic, messages: [{ key: "aborted", value: "never seen", partition: 0 }] });
    await aborted.abort();
    const committed = await transactional.transaction();
    await committed.send({ topic, messages: shapes().map((m) => ({ ...m, partition: 0 })) });
    await committed.commit();
  } finally {
    await transactional.disconnect();
  }
}

interface Decoded {
  responses: Array<{
    topicName: string;
    partitions: Array<{
      partition: number;
      errorCode: number;
      highWatermark: string;
      lastStableOffset: string;
      abortedTransactions: unknown;
      messages: Array<{
        offset: string;
        key: Buffer | null;
        value: Buffer | null;
        timestamp: string;
        headers?: unknown;
        isControlRecord?: boolean;
        batchContext?: { producerId: string; inTransaction: boolean };
      }>;
    }>;
  }>;
}

/** What the source reads of a decoded response, in either decoder's shape. */
function essentials(decoded: Decoded) {
  return decoded.responses.map((t) => ({
    topic: t.topicName,
    partitions: t.partitions.map((p) => ({
      partition: p.partition,
      errorCode: p.errorCode,
      highWatermark: p.highWatermark,
      lastStableOffset: p.lastStableOffset,
      aborted: p.abortedTransactions,
      records: p.messages.map((m) => ({
        offset: m.offset,
        key: m.key,
        value: m.value,
        timestamp: m.timestamp,
        headers: m.headers ?? {},
        control: m.isControlRecord === true,
        producerId: String(m.batchContext?.producerId),
        inTransaction: m.batchContext?.inTransaction === true,
      })),
    })),
  }));
}

describe("the source's Fetch response decoder", () => {
  it("decodes what kafkajs decodes from the same bytes: every record shape, GZIP, transactions, control records, log-append time", async () => {
    const kafka = newKafka(kafkaBrokers());
    const topic = uniqueName("fetch-decode");
    await createTopic(kafka, topic, 1);
    await writeEveryShape(kafka, topic);
    const gzip = uniqueName("fetch-decode-gzip");
    await createTopic(kafka, gzip, 1);
    await writeEveryShape(kafka, gzip, { gzip: true });
    const appendTime = uniqueName("fetch-decode-append");
    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.createTopics({
        topics: [
          {
            topic: appendTime,
            numPartitions: 1,
            replicationFactor: 1,
            configEntries: [{ name: "message.timestamp.type", value: "LogAppendTime" }],
          },
        ],
        waitForLeaders: true,
      });
    } finally {
      await admin.disconnect();
    }
    const plain = kafka.producer();
    await plain.connect();
    await plain.send({ topic: appendTime, messages: shapes().map((m) => ({ ...m, partition: 0 })) });
    await plain.disconnect();

    for (const [name, fetchOffset] of [
      [topic, "0"],
      [topic, "3"], // inside the first batch
      [gzip, "0"],
      [appendTime, "0"],
    ] as const) {
      const { cluster, broker } = await leaderOf(kafka, name);
      try {
        const captured = await fetchRaw(broker, name, fetchOffset);
        expect(captured.length).toBe(1);
        for (const { version, raw, decode } of captured) {
          const ours = await decodeFetchResponse(version, raw, (_codec, data) => gunzipSync(data));
          expect(essentials(ours)).toEqual(essentials((await decode(raw)) as Decoded));
          const records = ours.responses[0]?.partitions[0]?.messages ?? [];
          expect(records.length).toBeGreaterThanOrEqual(shapes().length);
        }
      } finally {
        await cluster.disconnect();
      }
    }
    // What the source reads: every committed record, the aborted one never.
    for (const name of [topic, gzip]) {
      const values = await readCommitted(kafka, name, 1);
      expect(values.length).toBe(3 * shapes().length);
      expect(values).not.toContain("never seen");
    }
  });

  it("refuses a record batch whose bytes fail its CRC32C", async () => {
    const kafka = new kafkajs.Kafka({ brokers: kafkaBrokers(), logLevel: kafkajs.logLevel.NOTHING });
    const topic = uniqueName("fetch-decode-crc");
    await createTopic(kafka, topic, 1);
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: [{ key: "k", value: "the last byte of the response", partition: 0 }] });
    await producer.disconnect();
    const { cluster, broker } = await leaderOf(kafka, topic);
    try {
      const [captured] = await fetchRaw(broker, topic);
      const { version, raw } = captured as Captured;
      await expect(decodeFetchResponse(version, raw)).resolves.toBeDefined();
      // The response ends with the batch's only record (its header count): a byte the CRC covers.
      raw.writeUInt8((raw.at(-1) as number) ^ 0xff, raw.length - 1);
      await expect(decodeFetchResponse(version, raw)).rejects.toBeInstanceOf(CorruptRecordBatchError);
    } finally {
      await cluster.disconnect();
    }
  });
});
