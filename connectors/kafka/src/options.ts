/**
 * The options every Kafka sink shares, and the checks that need no broker: the exactly-once
 * sink's transaction timeout against the job's timing (I7). The checks against the brokers
 * are in `startup-checks.ts`.
 */
import { ConfigurationError } from "@exactly/core";
import { requirePositiveInteger } from "@exactly/core/internal";
import type { KafkaHeaders } from "./kafka-connection.ts";
import type { KafkaConnectionOptions } from "./open-connection.ts";

/** One Kafka record as the serializer makes it. */
export interface KafkaSinkMessage {
  /** Overrides the sink's `topic` for this record. */
  readonly topic?: string;
  readonly key?: Buffer | string | null;
  readonly value: Buffer | string | null;
  readonly headers?: KafkaHeaders;
  /** Explicit partition; otherwise Kafka's default partitioner (murmur2 of the key; protocol/partitioner.ts). */
  readonly partition?: number;
  /** Record timestamp in ms; default: the time of sending. */
  readonly timestamp?: number;
}

/** What every Kafka sink takes, whatever its guarantee: where to connect, what to write, how to batch. */
export interface KafkaWriteOptions<T> extends KafkaConnectionOptions {
  /** Topic of every record whose serialized message names none. */
  readonly topic?: string;
  /** Record → Kafka message. Default: strings and Buffers as they are, anything else as JSON. */
  readonly serializer?: (record: T) => KafkaSinkMessage;
  /** Records buffered before a send. Default 5000. */
  readonly maxBatchRecords?: number;
  /** Approximate bytes (keys + values) buffered before a send; keep it below the broker's message.max.bytes. Default 512 KiB. */
  readonly maxBatchBytes?: number;
  /** Sends awaiting the broker before a write waits (bounds memory). Default 2. */
  readonly maxInFlightSends?: number;
  /** The codec of every record batch the sink sends (Kafka's `compression.type`). Default "none". */
  readonly compression?: KafkaCompression;
  /**
   * Records the serializer gives no timestamp get their event time (from the job's watermark
   * strategy) as their Kafka timestamp, as Flink's KafkaSink does. Default false: the time of
   * sending.
   */
  readonly eventTimeAsTimestamp?: boolean;
}

/** Kafka's record batch codecs. */
export type KafkaCompression = "none" | "gzip" | "snappy" | "lz4" | "zstd";

export const KAFKA_COMPRESSIONS: readonly KafkaCompression[] = ["none", "gzip", "snappy", "lz4", "zstd"];

/**
 * How long recovery can take, from the moment a transaction is pre-committed until the next
 * run commits it: the Kafka transaction timeout must exceed this, or the broker aborts a
 * pre-committed transaction before anyone can commit it (silent data loss without checks).
 * Pass the job's own values (StreamJob `checkpoint.intervalMs`, `checkpoint.timeoutMs` and the
 * restart strategy's `maxDelayMs`).
 */
export interface CheckpointTiming {
  readonly intervalMs: number;
  readonly timeoutMs: number;
  /** The longest delay before a restart (RestartStrategy.maxDelayMs; 10 s by default). */
  readonly restartDelayMs: number;
  /** In a sharded job, the shard lease's duration: a lost shard's successor starts only after it. */
  readonly takeoverMs?: number;
}

/** The lower bound the transaction timeout must meet, from `minTransactionTimeoutMs` and `checkpointTiming`. */
export function minimumTransactionTimeout(options: {
  readonly minTransactionTimeoutMs?: number;
  readonly checkpointTiming?: CheckpointTiming;
}): { ms: number; why: string } | undefined {
  const candidates: Array<{ ms: number; why: string }> = [];
  if (options.minTransactionTimeoutMs !== undefined) {
    candidates.push({
      ms: options.minTransactionTimeoutMs,
      why: `minTransactionTimeoutMs (${options.minTransactionTimeoutMs} ms)`,
    });
  }
  const timing = options.checkpointTiming;
  if (timing) {
    const takeover = timing.takeoverMs ?? 0;
    const ms = timing.intervalMs + timing.timeoutMs + timing.restartDelayMs + takeover;
    candidates.push({
      ms,
      why:
        `checkpointTiming: checkpoint interval ${timing.intervalMs} ms + checkpoint timeout ${timing.timeoutMs} ms` +
        ` + restart delay ${timing.restartDelayMs} ms` +
        (takeover > 0 ? ` + shard lease duration ${takeover} ms (lease.durationMs, --lease-duration)` : "") +
        ` = ${ms} ms`,
    });
  }
  return candidates.sort((a, b) => b.ms - a.ms)[0];
}

/** Static checks of the transaction timeout, before any broker is asked. */
export function validateTransactionTimeout(options: {
  readonly transactionTimeoutMs?: number;
  readonly minTransactionTimeoutMs?: number;
  readonly checkpointTiming?: CheckpointTiming;
}): number {
  const timeout = options.transactionTimeoutMs;
  if (timeout === undefined) {
    throw new ConfigurationError(
      "transactionTimeoutMs",
      "is required for EXACTLY_ONCE: set it explicitly, above checkpoint interval + checkpoint timeout + restart delay and at most the broker's transaction.max.timeout.ms",
    );
  }
  requirePositiveInteger("transactionTimeoutMs", timeout);
  const minimum = minimumTransactionTimeout(options);
  if (minimum && timeout < minimum.ms) {
    throw new ConfigurationError(
      "transactionTimeoutMs",
      `${timeout} ms is below ${minimum.why}: Kafka would abort a pre-committed transaction before recovery could commit it`,
    );
  }
  return timeout;
}
