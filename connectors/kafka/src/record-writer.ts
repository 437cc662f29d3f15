/**
 * Records to Kafka messages, into an {@link Outbox}: the write path every Kafka sink shares,
 * whatever it promises. What the sinks differ in is where the outbox sends (a transaction, or
 * a plain producer) and what the barrier waits for.
 */
import { type Batch, ConfigurationError, RecordWriteError } from "@exactly/core";
import type { KafkaMessage, TopicMessages } from "./kafka-connection.ts";
import { KAFKA_COMPRESSIONS, type KafkaSinkMessage, type KafkaWriteOptions } from "./options.ts";
import { Outbox, type SendLimits, sendLimits } from "./outbox.ts";

function defaultSerializer(record: unknown): KafkaSinkMessage {
  if (typeof record === "string" || Buffer.isBuffer(record)) return { value: record };
  return { value: JSON.stringify(record) };
}

function sizeOf(value: Buffer | string | null | undefined): number {
  if (value === null || value === undefined) return 0;
  return typeof value === "string" ? value.length : value.byteLength;
}

/** Serializes records into outboxes; checks the write options once, when the sink is made. */
export class RecordWriter<T> {
  private readonly serialize: (record: T) => KafkaSinkMessage;
  private readonly topic: string | undefined;
  private readonly limits: SendLimits;
  private readonly eventTime: boolean;

  constructor(options: KafkaWriteOptions<T>) {
    if (!options.brokers || options.brokers.length === 0) {
      throw new ConfigurationError("brokers", "give the bootstrap servers (`host:port`)");
    }
    if (options.compression !== undefined && !KAFKA_COMPRESSIONS.includes(options.compression)) {
      throw new ConfigurationError(
        "compression",
        `must be one of ${KAFKA_COMPRESSIONS.join(", ")}, not ${JSON.stringify(options.compression)}`,
      );
    }
    this.serialize = options.serializer ?? (defaultSerializer as (record: T) => KafkaSinkMessage);
    this.topic = options.topic;
    this.limits = sendLimits(options);
    this.eventTime = options.eventTimeAsTimestamp === true;
  }

  /** An outbox that sends through `send`, with the sink's batching limits. */
  outbox(send: (batch: TopicMessages[]) => Promise<unknown>): Outbox {
    return new Outbox(send, this.limits);
  }

  /**
   * Adds the batch's records to `outbox`, sending whenever it is full. A record the
   * serializer refuses, or that names no topic, fails as a {@link RecordWriteError} naming it.
   */
  async write(outbox: Outbox, batch: Batch<T>): Promise<void> {
    const { values: records, positions } = batch;
    const times = this.eventTime ? batch.timestamps : undefined;
    for (let i = 0; i < records.length; i++) {
      let topic: string;
      let message: KafkaMessage;
      try {
        const out = this.serialize(records[i] as T);
        const target = out.topic ?? this.topic;
        if (!target)
          throw new ConfigurationError("topic", "the record names no topic and the sink has no default topic");
        topic = target;
        message = { value: out.value };
        if (out.key !== undefined) message.key = out.key;
        if (out.headers !== undefined) message.headers = out.headers;
        if (out.partition !== undefined) message.partition = out.partition;
        if (out.timestamp !== undefined) {
          if (!Number.isSafeInteger(out.timestamp)) {
            throw new TypeError(`timestamp must be an integer number of ms, got ${out.timestamp}`);
          }
          message.timestamp = String(out.timestamp);
        } else if (times !== undefined && Number.isSafeInteger(times[i])) {
          message.timestamp = String(times[i]);
        }
      } catch (error) {
        throw new RecordWriteError(positions[i], error);
      }
      outbox.add(topic, message, sizeOf(message.value) + sizeOf(message.key) + 64);
      if (outbox.full) await outbox.dispatch();
    }
  }
}
