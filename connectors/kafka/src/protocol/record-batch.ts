/**
 * The body of a Produce request (versions 3 to 7, which share it) encoded into one buffer:
 * every partition's messages as one record batch (magic 2), its CRC32C over the batch once.
 * Client-neutral: the adapter sends it as the body of its Produce request. A client's own
 * encoder (an object per record and per field, 64-bit arithmetic on objects for every varint)
 * was most of the exactly-once sink's CPU time and garbage (docs/design.md §5).
 *
 * The records are the port's `KafkaMessage`s: a key, value or header value that is null or
 * undefined is written as null, a Buffer as its bytes, anything else as the UTF-8 of
 * `String(value)`; a header given as an array is one header per element, and a header whose
 * value is undefined is left out. The batch's first and largest timestamps are the numeric
 * minimum and maximum of its records'.
 */
import { crc32c } from "@node-rs/crc32";
import type { KafkaMessage } from "../kafka-connection.ts";

/** One partition's records of a Produce request, and the sequence number of its first. */
export interface PartitionRecords {
  readonly partition: number;
  readonly messages: readonly KafkaMessage[];
  readonly firstSequence: number;
}

export interface ProduceRequestBody {
  readonly transactionalId: string | null;
  readonly acks: number;
  readonly timeout: number;
  /** INT64 as a decimal string or a number; -1 for a producer that is not idempotent. */
  readonly producerId: string | number;
  readonly producerEpoch: number;
  readonly topicData: ReadonlyArray<{ readonly topic: string; readonly partitions: readonly PartitionRecords[] }>;
  /** Each batch's records compressed with this codec (1 gzip, 2 snappy, 3 lz4, 4 zstd); none when absent. */
  readonly compression?: BatchCompression;
}

/** A codec of Kafka's record batches: its id in the batch attributes, and the client's compressor. */
export interface BatchCompression {
  readonly codec: number;
  readonly compress: (records: Buffer) => Buffer;
}

/** Bytes of a record batch before its records: baseOffset … records count. */
const BATCH_HEADER = 61;
/** Where the CRC32C's range starts (the attributes), and where the CRC itself is. */
const CRC_FROM = 21;
const CRC_AT = 17;
const TRANSACTIONAL = 0x10;

function sizeOfUVarInt(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  return 5;
}

/** ZigZag of a 32-bit signed value, as an unsigned number. */
function zigZag32(value: number): number {
  return ((value << 1) ^ (value >> 31)) >>> 0;
}

/** ZigZag of a safe integer (a timestamp delta may exceed 32 bits), as a non-negative number. */
function zigZag64(value: number): number {
  return value >= 0 ? value * 2 : -value * 2 - 1;
}

function sizeOfUVarLong(value: number): number {
  let size = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 0x80);
    size++;
  }
  return size;
}

/** A key, value or header value as written: null, a Buffer's bytes, or the UTF-8 of a string. */
type Field = Buffer | string | null;

function fieldOf(value: unknown): Field {
  if (value === null || value === undefined) return null;
  return Buffer.isBuffer(value) || typeof value === "string" ? value : String(value);
}

/** A field's byte length; -1 for null. */
function lengthOf(field: Field): number {
  if (field === null) return -1;
  return typeof field === "string" ? Buffer.byteLength(field, "utf8") : field.length;
}

/** The bytes of a field of `length` (-1: null): its length as a zigzag varint, then the bytes. */
function sizeOfField(length: number): number {
  return length < 0 ? 1 : sizeOfUVarInt(zigZag32(length)) + length;
}

function timestampOf(message: KafkaMessage, now: number): number {
  if (message.timestamp === null || message.timestamp === undefined) return now;
  const timestamp = Number(message.timestamp);
  if (!Number.isSafeInteger(timestamp)) {
    throw new TypeError(`a Kafka message's timestamp must be an integer number of ms, got ${message.timestamp}`);
  }
  return timestamp;
}

/** A record's headers, one [name, value, name length, value length] per header. */
type Headers = Array<readonly [string, Field, number, number]>;

function headersOf(message: KafkaMessage): Headers {
  const out: Headers = [];
  const headers = message.headers;
  if (!headers) return out;
  for (const name of Object.keys(headers)) {
    const given = headers[name];
    for (const value of Array.isArray(given) ? given : [given]) {
      if (value === undefined) continue;
      const field = fieldOf(value);
      out.push([name, field, Buffer.byteLength(name, "utf8"), lengthOf(field)]);
    }
  }
  return out;
}

/** Writes into one buffer from a cursor; every size was computed before, so nothing grows. */
class Writer {
  offset = 0;
  readonly buffer: Buffer;

  constructor(size: number) {
    this.buffer = Buffer.allocUnsafe(size);
  }

  bytes(value: Buffer): void {
    value.copy(this.buffer, this.offset);
    this.offset += value.length;
  }

  int8(value: number): void {
    this.buffer[this.offset++] = value & 0xff;
  }

  int16(value: number): void {
    this.buffer.writeInt16BE(value, this.offset);
    this.offset += 2;
  }

  int32(value: number): void {
    this.buffer.writeInt32BE(value, this.offset);
    this.offset += 4;
  }

  int64(value: number | string): void {
    this.buffer.writeBigInt64BE(BigInt(value), this.offset);
    this.offset += 8;
  }

  uvarint(value: number): void {
    while (value >= 0x80) {
      this.buffer[this.offset++] = (value & 0x7f) | 0x80;
      value >>>= 7;
    }
    this.buffer[this.offset++] = value;
  }

  uvarlong(value: number): void {
    while (value >= 0x80) {
      this.buffer[this.offset++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    this.buffer[this.offset++] = value;
  }

  /** A field of `length` bytes (-1: null), as {@link sizeOfField} counted it. */
  field(field: Field, length: number): void {
    if (field === null) {
      this.buffer[this.offset++] = 1; // zigzag(-1)
      return;
    }
    this.uvarint(zigZag32(length));
    if (typeof field === "string") this.buffer.write(field, this.offset, length, "utf8");
    else field.copy(this.buffer, this.offset);
    this.offset += length;
  }

  /** INT16-length string; null as -1. */
  string(value: string | null): void {
    if (value === null) {
      this.int16(-1);
      return;
    }
    const length = Buffer.byteLength(value, "utf8");
    this.int16(length);
    this.offset += this.buffer.write(value, this.offset, length, "utf8");
  }
}

function sizeOfString(value: string | null): number {
  return 2 + (value === null ? 0 : Buffer.byteLength(value, "utf8"));
}

/**
 * A partition's records resolved for writing: each record's fields and sizes, measured once
 * in the sizing pass (in arrays by record index, not an object per record).
 */
interface PartitionPlan {
  readonly partition: number;
  readonly firstSequence: number;
  readonly firstTimestamp: number;
  readonly maxTimestamp: number;
  readonly count: number;
  readonly keys: Field[];
  readonly values: Field[];
  readonly keyLengths: Int32Array;
  readonly valueLengths: Int32Array;
  readonly bodySizes: Int32Array;
  readonly timestampDeltas: Float64Array;
  /** Only records with headers have an entry. */
  readonly headers: Array<Headers | undefined>;
  readonly batchSize: number;
}

function planPartition(data: PartitionRecords, now: number): PartitionPlan {
  const { messages } = data;
  const count = messages.length;
  const timestampDeltas = new Float64Array(count);
  let firstTimestamp = Number.POSITIVE_INFINITY;
  let maxTimestamp = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < count; i++) {
    const timestamp = timestampOf(messages[i] as KafkaMessage, now);
    timestampDeltas[i] = timestamp;
    if (timestamp < firstTimestamp) firstTimestamp = timestamp;
    if (timestamp > maxTimestamp) maxTimestamp = timestamp;
  }
  if (count === 0) firstTimestamp = maxTimestamp = now;
  const keys = new Array<Field>(count);
  const values = new Array<Field>(count);
  const keyLengths = new Int32Array(count);
  const valueLengths = new Int32Array(count);
  const bodySizes = new Int32Array(count);
  const headers = new Array<Headers | undefined>(count);
  let batchSize = BATCH_HEADER;
  for (let i = 0; i < count; i++) {
    const message = messages[i] as KafkaMessage;
    const key = fieldOf(message.key);
    const value = fieldOf(message.value);
    const keyLength = lengthOf(key);
    const valueLength = lengthOf(value);
    const delta = (timestampDeltas[i] as number) - firstTimestamp;
    timestampDeltas[i] = delta;
    let bodySize =
      1 + // attributes
      sizeOfUVarLong(zigZag64(delta)) +
      sizeOfUVarInt(zigZag32(i)) + // offsetDelta
      sizeOfField(keyLength) +
      sizeOfField(valueLength);
    if (message.headers) {
      const list = headersOf(message);
      headers[i] = list;
      bodySize += sizeOfUVarInt(zigZag32(list.length));
      for (const [, , nameLength, headerLength] of list)
        bodySize += sizeOfField(nameLength) + sizeOfField(headerLength);
    } else {
      bodySize += 1; // no headers
    }
    keys[i] = key;
    values[i] = value;
    keyLengths[i] = keyLength;
    valueLengths[i] = valueLength;
    bodySizes[i] = bodySize;
    batchSize += sizeOfUVarInt(zigZag32(bodySize)) + bodySize;
  }
  return {
    partition: data.partition,
    firstSequence: data.firstSequence,
    firstTimestamp,
    maxTimestamp,
    count,
    keys,
    values,
    keyLengths,
    valueLengths,
    bodySizes,
    timestampDeltas,
    headers,
    batchSize,
  };
}

function writeBatch(writer: Writer, plan: PartitionPlan, body: ProduceRequestBody): void {
  const start = writer.offset;
  writer.int64(0); // baseOffset: the broker assigns offsets
  writer.int32(plan.batchSize - 12); // batchLength: the bytes after this field
  writer.int32(-1); // partitionLeaderEpoch: the leader fills it in
  writer.int8(2); // magic
  writer.int32(0); // CRC32C, written once the batch is complete
  writer.int16(body.transactionalId === null ? 0 : TRANSACTIONAL);
  writer.int32(plan.count - 1); // lastOffsetDelta
  writer.int64(plan.firstTimestamp);
  writer.int64(plan.maxTimestamp);
  writer.int64(body.producerId);
  writer.int16(body.producerEpoch);
  writer.int32(plan.firstSequence);
  writer.int32(plan.count);
  for (let i = 0; i < plan.count; i++) {
    writer.uvarint(zigZag32(plan.bodySizes[i] as number));
    writer.int8(0); // record attributes: none defined
    writer.uvarlong(zigZag64(plan.timestampDeltas[i] as number));
    writer.uvarint(zigZag32(i)); // offsetDelta
    writer.field(plan.keys[i] as Field, plan.keyLengths[i] as number);
    writer.field(plan.values[i] as Field, plan.valueLengths[i] as number);
    const headers = plan.headers[i];
    if (headers === undefined) {
      writer.int8(0); // no headers
      continue;
    }
    writer.uvarint(zigZag32(headers.length));
    for (const [name, value, nameLength, valueLength] of headers) {
      writer.field(name, nameLength);
      writer.field(value, valueLength);
    }
  }
  const end = writer.offset;
  if (end - start !== plan.batchSize) {
    throw new Error(`record batch encoded to ${end - start} bytes, sized ${plan.batchSize}`);
  }
  writer.buffer.writeUInt32BE(crc32c(writer.buffer.subarray(start + CRC_FROM, end)), start + CRC_AT);
}

/**
 * One partition's batch with its records compressed: written whole, then its records (what
 * follows the batch header) compressed, the attributes given the codec, the length and the
 * CRC32C made anew. Kafka compresses the records of a batch, never its header.
 */
function compressedBatch(plan: PartitionPlan, body: ProduceRequestBody, compression: BatchCompression): Buffer {
  const plain = new Writer(plan.batchSize);
  writeBatch(plain, plan, body);
  const records = compression.compress(plain.buffer.subarray(BATCH_HEADER));
  const batch = Buffer.allocUnsafe(BATCH_HEADER + records.length);
  plain.buffer.copy(batch, 0, 0, BATCH_HEADER);
  records.copy(batch, BATCH_HEADER);
  batch.writeInt32BE(batch.length - 12, 8); // batchLength
  batch.writeInt16BE(batch.readInt16BE(CRC_FROM) | compression.codec, CRC_FROM); // attributes
  batch.writeUInt32BE(crc32c(batch.subarray(CRC_FROM)), CRC_AT);
  return batch;
}

/**
 * The Produce request body (v3–v7) for `body`, in one buffer sized exactly before it is
 * written. Record timestamps default to `now`.
 */
export function encodeProduceRequestBody(body: ProduceRequestBody, now: number = Date.now()): Buffer {
  const compression = body.compression && body.compression.codec !== 0 ? body.compression : undefined;
  const topics = body.topicData.map((topic) => ({
    topic: topic.topic,
    partitions: topic.partitions.map((data) => {
      const plan = planPartition(data, now);
      const compressed = compression ? compressedBatch(plan, body, compression) : undefined;
      return { plan, compressed, batchSize: compressed ? compressed.length : plan.batchSize };
    }),
  }));
  let size = sizeOfString(body.transactionalId) + 2 + 4 + 4;
  for (const topic of topics) {
    size += sizeOfString(topic.topic) + 4;
    for (const partition of topic.partitions) size += 4 + 4 + partition.batchSize;
  }
  const writer = new Writer(size);
  writer.string(body.transactionalId);
  writer.int16(body.acks);
  writer.int32(body.timeout);
  writer.int32(topics.length);
  for (const topic of topics) {
    writer.string(topic.topic);
    writer.int32(topic.partitions.length);
    for (const { plan, compressed, batchSize } of topic.partitions) {
      writer.int32(plan.partition);
      writer.int32(batchSize); // the record set's size in bytes
      if (compressed) writer.bytes(compressed);
      else writeBatch(writer, plan, body);
    }
  }
  if (writer.offset !== size) throw new Error(`Produce request encoded to ${writer.offset} bytes, sized ${size}`);
  return writer.buffer;
}
