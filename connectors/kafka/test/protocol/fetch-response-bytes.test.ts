// Our Fetch response decoder (src/protocol/fetch-response.ts) and read_committed filter
// (src/protocol/committed-records.ts) without a broker: record batches written by our Produce
// encoder, wrapped in a Fetch v11 response, read back record for record; a gzip batch through
// the given codec; and every batch the decoder must refuse, refused by name.
import { gunzipSync, gzipSync } from "node:zlib";
import { crc32c } from "@node-rs/crc32";
import { describe, expect, it } from "vitest";
import type { KafkaMessage } from "../../src/kafka-connection.ts";
import { committedPartitions } from "../../src/protocol/committed-records.ts";
import {
  CorruptRecordBatchError,
  decodeFetchResponse,
  UnsupportedCompressionError,
  UnsupportedMessageFormatError,
} from "../../src/protocol/fetch-response.ts";
import { encodeProduceRequestBody } from "../../src/protocol/record-batch.ts";

/** One record batch as our encoder writes it, at `baseOffset`. */
function batch(
  messages: KafkaMessage[],
  options: { baseOffset: bigint; producerId?: string; transactional?: boolean },
): Buffer {
  const body = encodeProduceRequestBody(
    {
      transactionalId: options.transactional ? "t" : null,
      acks: -1,
      timeout: 1000,
      producerId: options.producerId ?? "-1",
      producerEpoch: options.producerId ? 0 : -1,
      topicData: [{ topic: "t", partitions: [{ partition: 0, firstSequence: options.producerId ? 0 : -1, messages }] }],
    },
    1_700_000_000_000,
  );
  // transactional id, acks, timeout, topic count, topic name, partition count, partition, set size
  const idLength = body.readInt16BE(0);
  const at = 2 + Math.max(0, idLength) + 2 + 4 + 4 + 2 + 1 + 4 + 4 + 4;
  const set = Buffer.from(body.subarray(at));
  set.writeBigInt64BE(options.baseOffset, 0);
  return set;
}

/** A control batch (commit or abort marker) of `producerId` at `offset`. */
function marker(producerId: string, offset: bigint, commit: boolean): Buffer {
  const key = Buffer.from([0, 0, 0, commit ? 1 : 0]);
  const set = batch([{ key, value: Buffer.from([0, 0, 0, 0, 0, 0]), timestamp: "1700000000000" }], {
    baseOffset: offset,
    producerId,
    transactional: true,
  });
  set.writeInt16BE(set.readInt16BE(21) | 0x20, 21); // the control bit
  set.writeUInt32BE(crc32c(set.subarray(21)), 17);
  return set;
}

/** A Fetch v11 response of one partition holding `records`. */
function response(
  records: Buffer,
  options: { aborted?: Array<[string, bigint]>; highWatermark?: bigint; errorCode?: number } = {},
): Buffer {
  const name = Buffer.from("t");
  const aborted = options.aborted ?? [];
  const out = Buffer.alloc(
    4 + 2 + 4 + 4 + 2 + name.length + 4 + 4 + 2 + 8 + 8 + 8 + 4 + aborted.length * 16 + 4 + 4 + records.length,
  );
  let at = out.writeInt32BE(0, 0); // throttle
  at = out.writeInt16BE(0, at);
  at = out.writeInt32BE(0, at); // session
  at = out.writeInt32BE(1, at);
  at = out.writeInt16BE(name.length, at);
  at += name.copy(out, at);
  at = out.writeInt32BE(1, at);
  at = out.writeInt32BE(0, at); // partition
  at = out.writeInt16BE(options.errorCode ?? 0, at);
  at = out.writeBigInt64BE(options.highWatermark ?? 1000n, at);
  at = out.writeBigInt64BE(options.highWatermark ?? 1000n, at);
  at = out.writeBigInt64BE(0n, at);
  at = out.writeInt32BE(aborted.length, at);
  for (const [producerId, firstOffset] of aborted) {
    at = out.writeBigInt64BE(BigInt(producerId), at);
    at = out.writeBigInt64BE(firstOffset, at);
  }
  at = out.writeInt32BE(-1, at); // preferred read replica
  at = out.writeInt32BE(records.length, at);
  records.copy(out, at);
  return out;
}

const shapes: KafkaMessage[] = [
  { key: "k", value: "v", timestamp: "1700000000001" },
  { key: null, value: null, timestamp: "1700000000002" },
  { key: "", value: "", timestamp: "1699999999999" },
  {
    key: "é日本",
    value: Buffer.from([0, 255, 128]),
    headers: { a: "1", b: ["x", Buffer.from([7])] },
    timestamp: "1700000000003",
  },
];

const text = (b: Buffer | null) => (b === null ? null : b.toString("latin1"));

describe("Fetch response bytes", () => {
  it("reads back every record of our batches: offsets, keys, values, headers in order, timestamps", async () => {
    const decoded = await decodeFetchResponse(11, response(batch(shapes, { baseOffset: 100n })));
    const [partition] = decoded.responses[0]?.partitions ?? [];
    expect(partition?.highWatermark).toBe("1000");
    const records = partition?.messages ?? [];
    expect(records.map((r) => r.offset)).toEqual([100, 101, 102, 103]);
    expect(records.map((r) => [text(r.key), text(r.value), r.timestamp])).toEqual([
      ["k", "v", 1700000000001],
      [null, null, 1700000000002],
      ["", "", 1699999999999],
      [Buffer.from("é日本").toString("latin1"), "\u0000\u00ff\u0080", 1700000000003],
    ]);
    expect(records[3]?.headers).toEqual({ a: Buffer.from("1"), b: [Buffer.from("x"), Buffer.from([7])] });
  });

  it("decompresses a gzip batch through the codec it is given, and refuses one without codecs", async () => {
    const plain = batch(shapes, { baseOffset: 7n });
    const compressed = gzipSync(plain.subarray(61));
    const gz = Buffer.concat([plain.subarray(0, 61), compressed]);
    gz.writeInt32BE(gz.length - 12, 8);
    gz.writeInt16BE(gz.readInt16BE(21) | 1, 21);
    gz.writeUInt32BE(crc32c(gz.subarray(21)), 17);
    const codecs: number[] = [];
    const decoded = await decodeFetchResponse(11, response(gz), (codec, data) => {
      codecs.push(codec);
      return gunzipSync(data);
    });
    expect(codecs).toEqual([1]);
    expect(decoded.responses[0]?.partitions[0]?.messages.map((r) => [r.offset, text(r.value)])).toEqual([
      [7, "v"],
      [8, null],
      [9, ""],
      [10, "\u0000\u00ff\u0080"],
    ]);
    await expect(decodeFetchResponse(11, response(gz))).rejects.toBeInstanceOf(UnsupportedCompressionError);
  });

  it("refuses a batch that fails its CRC32C, and a message set older than record batches", async () => {
    const corrupt = batch(shapes, { baseOffset: 0n });
    corrupt.writeUInt8((corrupt.at(-1) as number) ^ 0xff, corrupt.length - 1);
    await expect(decodeFetchResponse(11, response(corrupt))).rejects.toBeInstanceOf(CorruptRecordBatchError);
    const old = batch(shapes, { baseOffset: 0n });
    old[16] = 1;
    await expect(decodeFetchResponse(11, response(old))).rejects.toBeInstanceOf(UnsupportedMessageFormatError);
    // Offsets are numbers: a batch reaching past 2^53 − 1 is refused, never read rounded.
    const far = batch(shapes, { baseOffset: 2n ** 53n - 2n });
    await expect(decodeFetchResponse(11, response(far))).rejects.toThrow(/past 2\^53/);
    const near = batch(shapes, { baseOffset: 2n ** 53n - 5n });
    const decoded = await decodeFetchResponse(11, response(near));
    expect(decoded.responses[0]?.partitions[0]?.messages.at(-1)?.offset).toBe(Number.MAX_SAFE_INTEGER - 1);
  });

  it("stops at a batch cut short by the fetch's size limit", async () => {
    const whole = batch(shapes, { baseOffset: 0n });
    const next = batch(shapes, { baseOffset: 4n });
    const decoded = await decodeFetchResponse(11, response(Buffer.concat([whole, next.subarray(0, next.length - 3)])));
    expect(decoded.responses[0]?.partitions[0]?.messages.map((r) => r.offset)).toEqual([0, 1, 2, 3]);
  });

  it("read_committed: drops control records and the records of aborted transactions, also when two interleave; keeps the fetch offset and where the next fetch starts", async () => {
    const one = (id: number, offset: bigint, producerId: string) =>
      batch([{ key: null, value: String(id), timestamp: "1700000000000" }], {
        baseOffset: offset,
        producerId,
        transactional: true,
      });
    // Producer 1 aborts a transaction that began first and ended last; producer 2's inside it commits.
    const records = Buffer.concat([
      one(1, 10n, "1"),
      one(2, 11n, "2"),
      one(3, 12n, "1"),
      marker("2", 13n, true),
      one(4, 14n, "1"),
      marker("1", 15n, false),
      batch([{ key: null, value: "5", timestamp: "1700000000000" }], { baseOffset: 16n }),
    ]);
    const decoded = await decodeFetchResponse(11, response(records, { aborted: [["1", 10n]] }));
    const [committed] = committedPartitions(decoded.responses, [{ topic: "t", partition: 0, fetchOffset: 11 }]);
    expect(committed?.records.map((r) => text(r.value))).toEqual(["2", "5"]);
    expect(committed?.nextOffset).toBe("17");
    // A partition the broker refused is left out.
    const refused = await decodeFetchResponse(11, response(records, { errorCode: 6 }));
    expect(committedPartitions(refused.responses, [{ topic: "t", partition: 0, fetchOffset: 0 }])).toEqual([]);
  });
});
