/**
 * Fetch responses (v4–v11, the versions kafkajs 2.2.4 sends with read_committed) decoded in one
 * pass over the response buffer, into the shape kafkajs's own decoder returns, which
 * fetch.ts reads. kafkajs's decoder makes a Decoder object per record and a `Long` for each
 * record's offset and timestamp, and rebuilds each record's headers object once per header:
 * most of the Kafka source's CPU. Keys, values and header values are views into the response
 * buffer, as with kafkajs.
 *
 * Record batches of magic 2 without compression are decoded here, their CRC32C checked (kafkajs
 * checks none; a batch that fails it is refused, never read). A partition's record set that
 * holds a compressed batch, or older message sets (magic 0 or 1), goes to kafkajs's own decoder
 * for that record set (its codecs, the same result as before).
 */
import { ExactlyError } from "@exactly/core";
import { crc32c } from "@node-rs/crc32";
import { internals, KafkajsInternalsError, requireInternal } from "./load.ts";
import type { RawMessage, RawPartitionData } from "./shapes.ts";

/** The Fetch versions whose layout this file reads. */
export const FIRST_FETCH_VERSION = 4;
export const LAST_FETCH_VERSION = 11;

/** kafkajs's decoder of one partition's record set (size-prefixed), for what this file leaves to it. */
type DecodeMessages = (decoder: unknown) => Promise<RawMessage[]>;
const decodeMessages = requireInternal("src/protocol/requests/fetch/v4/decodeMessages.js") as DecodeMessages;
if (typeof decodeMessages !== "function") {
  throw new KafkajsInternalsError("protocol/requests/fetch/v4/decodeMessages.js is not a function");
}

/** A fetched record batch (magic 2) that fails its CRC32C: its bytes are not what the producer wrote. */
export class CorruptRecordBatchError extends ExactlyError {
  constructor(message: string) {
    super("KAFKA_CORRUPT_RECORD_BATCH", message);
  }
}

const MAGIC_AT = 16;
/** Batch header, from the base offset to the record count included. */
const BATCH_HEADER = 61;
const CRC_AT = 17;
const CRC_FROM = 21;
const COMPRESSION_MASK = 0x07;
const TIMESTAMP_TYPE_LOG_APPEND = 0x08;
const TRANSACTIONAL = 0x10;
const CONTROL = 0x20;

class Reader {
  pos: number;
  readonly buf: Buffer;
  constructor(buf: Buffer, pos = 0) {
    this.buf = buf;
    this.pos = pos;
  }
  int16(): number {
    const v = this.buf.readInt16BE(this.pos);
    this.pos += 2;
    return v;
  }
  int32(): number {
    const v = this.buf.readInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  int64(): string {
    const v = this.buf.readBigInt64BE(this.pos);
    this.pos += 8;
    return v.toString();
  }
  string(): string {
    const length = this.int16();
    const v = this.buf.toString("utf8", this.pos, this.pos + length);
    this.pos += length;
    return v;
  }
  /** A zigzag varint up to 32 bits. */
  varint(): number {
    let raw = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = this.buf[this.pos++] as number;
      raw |= (byte & 0x7f) << shift;
      shift += 7;
    } while (byte & 0x80 && shift < 35);
    return (raw >>> 1) ^ -(raw & 1);
  }
  /** A zigzag varlong, exact while within ±2^53. */
  varlong(): number {
    let raw = 0;
    let scale = 1;
    let byte: number;
    do {
      byte = this.buf[this.pos++] as number;
      raw += (byte & 0x7f) * scale;
      scale *= 128;
    } while (byte & 0x80 && scale < 2 ** 70);
    return raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2;
  }
  /** Varint-length bytes, null for -1: a view into the buffer. */
  bytes(): Buffer | null {
    const length = this.varint();
    if (length < 0) return null;
    const v = this.buf.subarray(this.pos, this.pos + length);
    this.pos += length;
    return v;
  }
}

/** `base + delta` of an INT64 as a decimal string; Numbers while exact. */
function plus(base: bigint, baseNumber: number, delta: number): string {
  if (Number.isSafeInteger(baseNumber + delta)) return String(baseNumber + delta);
  return (base + BigInt(delta)).toString();
}

type Headers = Record<string, Buffer | string | Array<Buffer | string> | undefined>;

/** The records of the magic-2, uncompressed batches in `[start, end)`; undefined if some batch is not such a one. */
function decodeBatches(buf: Buffer, start: number, end: number): RawMessage[] | undefined {
  const out: RawMessage[] = [];
  let pos = start;
  // kafkajs stops where less than a batch header's worth remains, and at a batch cut short by maxBytes.
  while (end - pos >= 49) {
    const length = buf.readInt32BE(pos + 8);
    const batchEnd = pos + 12 + length;
    if (batchEnd > end) break;
    if (buf[pos + MAGIC_AT] !== 2) return undefined;
    const attributes = buf.readInt16BE(pos + 21);
    if ((attributes & COMPRESSION_MASK) !== 0) return undefined;
    if (crc32c(buf.subarray(pos + CRC_FROM, batchEnd)) !== buf.readUInt32BE(pos + CRC_AT)) {
      throw new CorruptRecordBatchError(
        `a fetched record batch at offset ${buf.readBigInt64BE(pos)} fails its CRC32C: refused, not read`,
      );
    }
    const baseOffset = buf.readBigInt64BE(pos);
    const baseOffsetNumber = Number(baseOffset);
    const firstTimestamp = buf.readBigInt64BE(pos + 27);
    const firstTimestampNumber = Number(firstTimestamp);
    const maxTimestamp = buf.readBigInt64BE(pos + 35).toString();
    const logAppendTime = (attributes & TIMESTAMP_TYPE_LOG_APPEND) !== 0;
    const isControlBatch = (attributes & CONTROL) !== 0;
    const batchContext = {
      firstOffset: baseOffset.toString(),
      firstTimestamp: firstTimestamp.toString(),
      partitionLeaderEpoch: buf.readInt32BE(pos + 12),
      inTransaction: (attributes & TRANSACTIONAL) !== 0,
      isControlBatch,
      lastOffsetDelta: buf.readInt32BE(pos + 23),
      producerId: buf.readBigInt64BE(pos + 43).toString(),
      producerEpoch: buf.readInt16BE(pos + 51),
      firstSequence: buf.readInt32BE(pos + 53),
      maxTimestamp,
      timestampType: logAppendTime ? 1 : 0,
      magicByte: 2,
    };
    const count = buf.readInt32BE(pos + 57);
    const reader = new Reader(buf, pos + BATCH_HEADER);
    for (let i = 0; i < count && reader.pos < batchEnd; i++) {
      const recordLength = reader.varint();
      const recordEnd = reader.pos + recordLength;
      const recordAttributes = buf.readInt8(reader.pos++);
      const timestampDelta = reader.varlong();
      const offsetDelta = reader.varint();
      const key = reader.bytes();
      const value = reader.bytes();
      const headerCount = reader.varint();
      const headers: Headers = {};
      for (let h = 0; h < headerCount; h++) {
        const nameLength = reader.varint();
        const name = buf.toString("utf8", reader.pos, reader.pos + nameLength);
        reader.pos += nameLength;
        const headerValue = reader.bytes() as Buffer;
        const earlier = headers[name];
        if (earlier === undefined) headers[name] = headerValue;
        else if (Array.isArray(earlier)) earlier.push(headerValue);
        else headers[name] = [earlier, headerValue];
      }
      reader.pos = recordEnd;
      out.push({
        magicByte: 2,
        attributes: recordAttributes,
        timestamp: logAppendTime ? maxTimestamp : plus(firstTimestamp, firstTimestampNumber, timestampDelta),
        offset: plus(baseOffset, baseOffsetNumber, offsetDelta),
        key,
        value,
        headers,
        isControlRecord: isControlBatch,
        batchContext,
      } as RawMessage);
    }
    pos = batchEnd;
  }
  return out;
}

/** One partition's record set at the reader (size-prefixed), as kafkajs's decodeMessages returns it. */
async function decodeRecordSet(reader: Reader): Promise<RawMessage[]> {
  const sizeAt = reader.pos;
  const size = reader.int32();
  if (size <= 0 || reader.buf.length - reader.pos < size) {
    // kafkajs reads nothing more of a record set it cannot read whole; nor does this.
    reader.pos = Math.min(reader.buf.length, reader.pos + Math.max(size, 0));
    return [];
  }
  const start = reader.pos;
  const end = start + size;
  reader.pos = end;
  const decoded = decodeBatches(reader.buf, start, end);
  if (decoded) return decoded;
  return decodeMessages(new internals.Decoder(reader.buf.subarray(sizeAt, end)));
}

export interface DecodedFetchResponse {
  throttleTime: number;
  clientSideThrottleTime?: number;
  errorCode?: number;
  sessionId?: number;
  responses: Array<{ topicName: string; partitions: RawPartitionData[] }>;
}

/** A Fetch response of `version` (4–11), as kafkajs's response module of that version decodes it. */
export async function decodeFetchResponse(version: number, raw: Buffer): Promise<DecodedFetchResponse> {
  const reader = new Reader(raw);
  const throttle = reader.int32();
  const head: Omit<DecodedFetchResponse, "responses"> =
    version >= 8
      ? { throttleTime: 0, clientSideThrottleTime: throttle, errorCode: reader.int16(), sessionId: reader.int32() }
      : version >= 7
        ? { throttleTime: throttle, errorCode: reader.int16(), sessionId: reader.int32() }
        : { throttleTime: throttle };
  const responses: DecodedFetchResponse["responses"] = [];
  const topics = reader.int32();
  for (let t = 0; t < topics; t++) {
    const topicName = reader.string();
    const partitions: RawPartitionData[] = [];
    const count = reader.int32();
    for (let p = 0; p < count; p++) {
      const partition: Record<string, unknown> = {
        partition: reader.int32(),
        errorCode: reader.int16(),
        highWatermark: reader.int64(),
        lastStableOffset: reader.int64(),
      };
      if (version >= 5) partition.lastStartOffset = reader.int64();
      const aborted = reader.int32();
      const abortedTransactions: Array<{ producerId: string; firstOffset: string }> = [];
      for (let a = 0; a < aborted; a++)
        abortedTransactions.push({ producerId: reader.int64(), firstOffset: reader.int64() });
      partition.abortedTransactions = abortedTransactions;
      if (version >= 11) partition.preferredReadReplica = reader.int32();
      partition.messages = await decodeRecordSet(reader);
      partitions.push(partition as unknown as RawPartitionData);
    }
    responses.push({ topicName, partitions });
  }
  return { ...head, responses };
}
