/**
 * Fetch responses (v4–v11: the versions that name topics and have no tagged fields) decoded
 * in one pass over the response buffer. Client-neutral: an adapter sends the Fetch request
 * and hands the response's bytes here, with the codecs of its client for compressed batches.
 * Keys, values and header values are views into the response buffer (or into a batch's
 * decompressed records). A client's own decoder (a Decoder object per record and a `Long` for
 * each record's offset and timestamp, as kafkajs's) was most of the Kafka source's CPU.
 *
 * Record batches of magic 2 only (Kafka 0.11's format; Kafka 4 writes and keeps nothing
 * else): an older message set is refused, naming its offset. Each batch's CRC32C is checked
 * (a batch that fails it is refused, never read), and a log-append-time
 * batch gives every record the batch's time.
 */
import { ExactlyError } from "@exactly/core";
import { crc32c } from "@node-rs/crc32";
import type { KafkaHeaders } from "../kafka-connection.ts";

/** The Fetch versions whose layout this file reads. */
export const FIRST_FETCH_VERSION = 4;
export const LAST_FETCH_VERSION = 11;

/**
 * Decompresses a batch's records: `codec` is the batch's compression (1 gzip, 2 snappy, 3
 * lz4, 4 zstd), `data` the compressed bytes. Given by the adapter, from its client's codecs.
 */
export type Decompress = (codec: number, data: Buffer) => Buffer | Promise<Buffer>;

/** One decoded record of a Fetch response, control records included. */
export interface DecodedRecord {
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
  timestamp: number;
  headers: KafkaHeaders;
  isControlRecord: boolean;
  batchContext: { producerId: string; inTransaction: boolean };
}

/** One partition of a decoded Fetch response. */
export interface DecodedPartition {
  partition: number;
  errorCode: number;
  highWatermark: string;
  lastStableOffset: string;
  abortedTransactions: Array<{ producerId: string; firstOffset: string }>;
  messages: DecodedRecord[];
}

/** A fetched record set in a format older than record batches (magic 0 or 1). */
export class UnsupportedMessageFormatError extends ExactlyError {
  constructor(message: string) {
    super("KAFKA_UNSUPPORTED_MESSAGE_FORMAT", message);
  }
}

/** A compressed batch whose codec the adapter's client cannot decompress. */
export class UnsupportedCompressionError extends ExactlyError {
  constructor(message: string) {
    super("KAFKA_UNSUPPORTED_COMPRESSION", message);
  }
}

/** A fetched record batch (magic 2) that fails its CRC32C: its bytes are not what the producer wrote. */
export class CorruptRecordBatchError extends ExactlyError {
  constructor(message: string) {
    super("KAFKA_CORRUPT_RECORD_BATCH", message);
  }
}

/** The headers of every record that has none: one frozen object, not one per record. */
const NO_HEADERS: KafkaHeaders = Object.freeze({});

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

/** A batch's header fields its records need. */
interface BatchFields {
  readonly baseOffset: number;
  readonly firstTimestamp: number;
  /** Every record's time, for a log-append-time batch. */
  readonly logAppendTime: number | undefined;
  readonly isControlBatch: boolean;
  readonly context: DecodedRecord["batchContext"];
}

/** Decodes `count` records from `buf` at `from` (a batch's records, or their decompressed bytes) into `out`. */
function decodeRecords(
  buf: Buffer,
  from: number,
  end: number,
  count: number,
  batch: BatchFields,
  out: DecodedRecord[],
) {
  const reader = new Reader(buf, from);
  for (let i = 0; i < count && reader.pos < end; i++) {
    const recordLength = reader.varint();
    const recordEnd = reader.pos + recordLength;
    reader.pos++; // the record's attributes: unused
    const timestampDelta = reader.varlong();
    const offsetDelta = reader.varint();
    const key = reader.bytes();
    const value = reader.bytes();
    const headerCount = reader.varint();
    const headers: KafkaHeaders = headerCount === 0 ? NO_HEADERS : {};
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
      offset: batch.baseOffset + offsetDelta,
      key,
      value,
      timestamp: batch.logAppendTime ?? batch.firstTimestamp + timestampDelta,
      headers,
      isControlRecord: batch.isControlBatch,
      batchContext: batch.context,
    });
  }
}

/** The records of the batches in `[start, end)`; a batch cut short by the fetch's maxBytes ends them. */
async function decodeBatches(
  buf: Buffer,
  start: number,
  end: number,
  decompress: Decompress | undefined,
): Promise<DecodedRecord[]> {
  const out: DecodedRecord[] = [];
  let pos = start;
  // Less than a batch header's worth left, or a batch cut short: the next fetch reads it.
  while (end - pos >= BATCH_HEADER) {
    const length = buf.readInt32BE(pos + 8);
    const batchEnd = pos + 12 + length;
    if (batchEnd > end) break;
    const magic = buf[pos + MAGIC_AT] as number;
    if (magic !== 2) {
      throw new UnsupportedMessageFormatError(
        `a fetched record set at offset ${buf.readBigInt64BE(pos)} is in message format v${magic}; ` +
          "only record batches (v2, Kafka 0.11 and later) are read",
      );
    }
    if (crc32c(buf.subarray(pos + CRC_FROM, batchEnd)) !== buf.readUInt32BE(pos + CRC_AT)) {
      throw new CorruptRecordBatchError(
        `a fetched record batch at offset ${buf.readBigInt64BE(pos)} fails its CRC32C: refused, not read`,
      );
    }
    const attributes = buf.readInt16BE(pos + 21);
    const baseOffset = Number(buf.readBigInt64BE(pos));
    const count = buf.readInt32BE(pos + 57);
    const lastOffset = baseOffset + buf.readInt32BE(pos + 23);
    if (!Number.isSafeInteger(lastOffset)) {
      throw new UnsupportedMessageFormatError(
        `a fetched record batch at offset ${buf.readBigInt64BE(pos)} reaches past 2^53 − 1, the last offset a record's number holds exactly`,
      );
    }
    const batch: BatchFields = {
      baseOffset,
      firstTimestamp: Number(buf.readBigInt64BE(pos + 27)),
      logAppendTime: (attributes & TIMESTAMP_TYPE_LOG_APPEND) !== 0 ? Number(buf.readBigInt64BE(pos + 35)) : undefined,
      isControlBatch: (attributes & CONTROL) !== 0,
      context: {
        producerId: buf.readBigInt64BE(pos + 43).toString(),
        inTransaction: (attributes & TRANSACTIONAL) !== 0,
      },
    };
    const codec = attributes & COMPRESSION_MASK;
    if (codec === 0) {
      decodeRecords(buf, pos + BATCH_HEADER, batchEnd, count, batch, out);
    } else {
      if (!decompress) {
        throw new UnsupportedCompressionError(
          `a fetched record batch at offset ${baseOffset} is compressed (codec ${codec}), and no codecs were given`,
        );
      }
      const records = await decompress(codec, buf.subarray(pos + BATCH_HEADER, batchEnd));
      decodeRecords(records, 0, records.length, count, batch, out);
    }
    pos = batchEnd;
  }
  return out;
}

/** One partition's record set at the reader (size-prefixed). */
async function decodeRecordSet(reader: Reader, decompress: Decompress | undefined): Promise<DecodedRecord[]> {
  const size = reader.int32();
  if (size <= 0 || reader.buf.length - reader.pos < size) {
    // A record set that is not there whole is not read.
    reader.pos = Math.min(reader.buf.length, reader.pos + Math.max(size, 0));
    return [];
  }
  const start = reader.pos;
  reader.pos = start + size;
  return decodeBatches(reader.buf, start, start + size, decompress);
}

export interface DecodedFetchResponse {
  /** ms the broker throttled this client for. */
  throttleTimeMs: number;
  /** The request's own error (v7 and later; 0 before). */
  errorCode: number;
  responses: Array<{ topicName: string; partitions: DecodedPartition[] }>;
}

/** A Fetch response of `version` (4–11), from its bytes after the response header. */
export async function decodeFetchResponse(
  version: number,
  raw: Buffer,
  decompress?: Decompress,
): Promise<DecodedFetchResponse> {
  if (version < FIRST_FETCH_VERSION || version > LAST_FETCH_VERSION) {
    throw new RangeError(
      `Fetch v${version} is not one this decoder reads (v${FIRST_FETCH_VERSION}–v${LAST_FETCH_VERSION})`,
    );
  }
  const reader = new Reader(raw);
  const throttleTimeMs = reader.int32();
  let errorCode = 0;
  if (version >= 7) {
    errorCode = reader.int16();
    reader.int32(); // the fetch session's id: sessions are not used
  }
  const responses: DecodedFetchResponse["responses"] = [];
  const topics = reader.int32();
  for (let t = 0; t < topics; t++) {
    const topicName = reader.string();
    const partitions: DecodedPartition[] = [];
    const count = reader.int32();
    for (let p = 0; p < count; p++) {
      const partition = reader.int32();
      const partitionError = reader.int16();
      const highWatermark = reader.int64();
      const lastStableOffset = reader.int64();
      if (version >= 5) reader.int64(); // the log start offset
      const aborted = reader.int32();
      const abortedTransactions: DecodedPartition["abortedTransactions"] = [];
      for (let a = 0; a < aborted; a++) {
        abortedTransactions.push({ producerId: reader.int64(), firstOffset: reader.int64() });
      }
      if (version >= 11) reader.int32(); // the preferred read replica
      partitions.push({
        partition,
        errorCode: partitionError,
        highWatermark,
        lastStableOffset,
        abortedTransactions,
        messages: await decodeRecordSet(reader, decompress),
      });
    }
    responses.push({ topicName, partitions });
  }
  return { throttleTimeMs, errorCode, responses };
}
