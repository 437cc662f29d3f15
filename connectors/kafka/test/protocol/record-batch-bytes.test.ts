// Our Produce body encoder (src/protocol/record-batch.ts) without a broker: the bytes it writes
// read back through another implementation of Kafka's format, @platformatic/kafka's public
// Reader and readRecordsBatch, and its CRC32C checked with that library's crc32c.
import { compressionsAlgorithms, crc32c, Reader, readRecordsBatch } from "@platformatic/kafka";
import { describe, expect, it } from "vitest";
import { encodeProduceRequestBody } from "../../src/protocol/record-batch.ts";

/** The record set of the first partition of a v3–v7 Produce body, and the fields before it. */
function firstRecordSet(body: Buffer) {
  let at = 0;
  const transactionalIdLength = body.readInt16BE(at);
  at += 2;
  const transactionalId = transactionalIdLength < 0 ? null : body.toString("utf8", at, at + transactionalIdLength);
  at += Math.max(0, transactionalIdLength);
  const acks = body.readInt16BE(at);
  const timeout = body.readInt32BE(at + 2);
  at += 6;
  const topics = body.readInt32BE(at);
  const topicLength = body.readInt16BE(at + 4);
  const topic = body.toString("utf8", at + 6, at + 6 + topicLength);
  at += 6 + topicLength;
  const partitions = body.readInt32BE(at);
  const partition = body.readInt32BE(at + 4);
  const setLength = body.readInt32BE(at + 8);
  at += 12;
  return {
    transactionalId,
    acks,
    timeout,
    topics,
    topic,
    partitions,
    partition,
    set: body.subarray(at, at + setLength),
  };
}

describe("record batch bytes", () => {
  it("a transactional batch reads back field for field, and its CRC32C covers attributes to the end", () => {
    const body = encodeProduceRequestBody(
      {
        transactionalId: "out-0-3",
        acks: -1,
        timeout: 30_000,
        producerId: "1234567890123",
        producerEpoch: 7,
        topicData: [
          {
            topic: "orders",
            partitions: [
              {
                partition: 2,
                firstSequence: 41,
                messages: [
                  {
                    key: "k1",
                    value: "v1",
                    timestamp: "1700000000000",
                    headers: { h: "x", many: ["a", Buffer.from([0, 255])] },
                  },
                  { key: null, value: null, timestamp: "1700000000005" },
                  { key: Buffer.from([1, 2]), value: "é".repeat(70), timestamp: "1699999999990" },
                ],
              },
            ],
          },
        ],
      },
      1_800_000_000_000,
    );
    const request = firstRecordSet(body);
    expect(request).toMatchObject({
      transactionalId: "out-0-3",
      acks: -1,
      timeout: 30_000,
      topics: 1,
      topic: "orders",
      partitions: 1,
      partition: 2,
    });
    const batch = readRecordsBatch(Reader.from(request.set));
    expect(batch.magic).toBe(2);
    expect(batch.firstOffset).toBe(0n);
    expect(batch.length).toBe(request.set.length - 12);
    expect(batch.attributes & 0x10).toBe(0x10); // transactional
    expect(batch.attributes & 0x07).toBe(0); // not compressed
    expect(batch.producerId).toBe(1234567890123n);
    expect(batch.producerEpoch).toBe(7);
    expect(batch.firstSequence).toBe(41);
    expect(batch.lastOffsetDelta).toBe(2);
    expect(batch.firstTimestamp).toBe(1699999999990n);
    expect(batch.maxTimestamp).toBe(1700000000005n);
    expect(batch.crc).toBe(crc32c(request.set.subarray(21)));
    const records = batch.records.map((r) => ({
      offsetDelta: r.offsetDelta,
      timestamp: batch.firstTimestamp + r.timestampDelta,
      key: r.key?.toString("hex") ?? null,
      value: r.value?.toString() ?? null,
      headers: r.headers.map(([k, v]) => [k?.toString() ?? null, v?.toString("hex") ?? null]),
    }));
    expect(records).toEqual([
      {
        offsetDelta: 0,
        timestamp: 1700000000000n,
        key: Buffer.from("k1").toString("hex"),
        value: "v1",
        headers: [
          ["h", Buffer.from("x").toString("hex")],
          ["many", Buffer.from("a").toString("hex")],
          ["many", "00ff"],
        ],
      },
      { offsetDelta: 1, timestamp: 1700000000005n, key: null, value: null, headers: [] },
      { offsetDelta: 2, timestamp: 1699999999990n, key: "0102", value: "é".repeat(70), headers: [] },
    ]);
  });

  it("a record without a timestamp takes the time it is encoded; a producer that is not idempotent writes -1", () => {
    const body = encodeProduceRequestBody(
      {
        transactionalId: null,
        acks: 1,
        timeout: 5_000,
        producerId: -1,
        producerEpoch: -1,
        topicData: [{ topic: "t", partitions: [{ partition: 0, firstSequence: -1, messages: [{ value: "x" }] }] }],
      },
      1_800_000_000_000,
    );
    const request = firstRecordSet(body);
    expect(request.transactionalId).toBeNull();
    const batch = readRecordsBatch(Reader.from(request.set));
    expect(batch.attributes & 0x10).toBe(0);
    expect(batch.producerId).toBe(-1n);
    expect(batch.producerEpoch).toBe(-1);
    expect(batch.firstSequence).toBe(-1);
    expect(batch.firstTimestamp).toBe(1_800_000_000_000n);
    expect(batch.records.map((r) => r.value?.toString())).toEqual(["x"]);
    expect(batch.crc).toBe(crc32c(request.set.subarray(21)));
  });

  it.each(["gzip", "snappy", "lz4", "zstd"] as const)(
    "a %s batch: its records compressed after the header, the codec in its attributes, its CRC32C over the compressed bytes",
    (codec) => {
      const algorithm = compressionsAlgorithms[codec];
      const messages = Array.from({ length: 200 }, (_, i) => ({
        key: `key-${i % 7}`,
        value: JSON.stringify({ id: i, pad: "x".repeat(i % 50) }),
        timestamp: String(1_700_000_000_000 + i),
        ...(i % 3 === 0 ? { headers: { h: `v${i}` } } : {}),
      }));
      const encode = (compression?: { codec: number; compress: (b: Buffer) => Buffer }) =>
        encodeProduceRequestBody(
          {
            transactionalId: "t-1",
            acks: -1,
            timeout: 30_000,
            producerId: "42",
            producerEpoch: 3,
            topicData: [{ topic: "t", partitions: [{ partition: 1, firstSequence: 5, messages }] }],
            ...(compression ? { compression } : {}),
          },
          1_800_000_000_000,
        );
      const plain = firstRecordSet(encode()).set;
      const request = firstRecordSet(
        encode({ codec: algorithm.bitmask, compress: (records) => algorithm.compressSync(records) }),
      );
      expect(request.set.length, "compressed smaller than plain").toBeLessThan(plain.length);
      // The header is the plain batch's but for its length, attributes and CRC.
      expect(request.set.subarray(0, 8)).toEqual(plain.subarray(0, 8));
      expect(request.set.subarray(23, 61)).toEqual(plain.subarray(23, 61));
      const batch = readRecordsBatch(Reader.from(request.set));
      expect(batch.attributes & 0x07).toBe(algorithm.bitmask);
      expect(batch.attributes & 0x10).toBe(0x10);
      expect(batch.length).toBe(request.set.length - 12);
      expect(batch.crc).toBe(crc32c(request.set.subarray(21)));
      expect(batch.firstSequence).toBe(5);
      expect(batch.records.map((r) => [r.key?.toString(), r.value?.toString(), r.headers.length])).toEqual(
        messages.map((m) => [m.key, m.value, m.headers ? 1 : 0]),
      );
    },
  );
});
