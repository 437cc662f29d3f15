/**
 * Batched sends, shared by every Kafka sink: records accumulate and go out as one
 * `sendBatch` per batch, a bounded number in flight, never a promise per record.
 */
import { requirePositiveInteger } from "@exactly/core/internal";
import type { KafkaMessage, TopicMessages } from "./kafka-connection.ts";

/** When a buffered batch is sent, and how many sends may await the broker at once. */
export interface SendLimits {
  readonly records: number;
  readonly bytes: number;
  readonly inFlight: number;
}

/** The limits of the sink options (validated: positive integers), with their defaults. */
export function sendLimits(options: {
  readonly maxBatchRecords?: number;
  readonly maxBatchBytes?: number;
  readonly maxInFlightSends?: number;
}): SendLimits {
  return {
    records: requirePositiveInteger("maxBatchRecords", options.maxBatchRecords ?? 5000),
    bytes: requirePositiveInteger("maxBatchBytes", options.maxBatchBytes ?? 512 * 1024),
    inFlight: requirePositiveInteger("maxInFlightSends", options.maxInFlightSends ?? 2),
  };
}

/**
 * Accumulates messages and sends them in batches, a bounded number in flight: one promise a
 * batch, not one a record. The first failure is kept and thrown by the next add or flush.
 */
export class Outbox {
  private topics = new Map<string, KafkaMessage[]>();
  private records = 0;
  private bytes = 0;
  private readonly inFlight: Promise<void>[] = [];
  private failure: { error: unknown } | undefined;
  private readonly send: (batch: TopicMessages[]) => Promise<unknown>;
  private readonly limits: SendLimits;

  constructor(send: (batch: TopicMessages[]) => Promise<unknown>, limits: SendLimits) {
    this.send = send;
    this.limits = limits;
  }

  add(topic: string, message: KafkaMessage, size: number): void {
    let list = this.topics.get(topic);
    if (!list) {
      list = [];
      this.topics.set(topic, list);
    }
    list.push(message);
    this.records++;
    this.bytes += size;
  }

  get full(): boolean {
    return this.records >= this.limits.records || this.bytes >= this.limits.bytes;
  }

  /** Sends what is buffered; waits while too many sends are in flight. */
  async dispatch(): Promise<void> {
    this.throwIfFailed();
    if (this.records > 0) {
      const batch = [...this.topics].map(([topic, messages]) => ({ topic, messages }));
      this.topics = new Map();
      this.records = 0;
      this.bytes = 0;
      const sending: Promise<void> = this.send(batch).then(
        () => {
          this.inFlight.splice(this.inFlight.indexOf(sending), 1);
        },
        (error: unknown) => {
          this.inFlight.splice(this.inFlight.indexOf(sending), 1);
          this.failure ??= { error };
        },
      );
      this.inFlight.push(sending);
    }
    while (this.inFlight.length >= this.limits.inFlight) await Promise.race(this.inFlight);
    this.throwIfFailed();
  }

  /** Sends everything and waits until the broker acknowledged all of it. */
  async flush(): Promise<void> {
    await this.dispatch();
    while (this.inFlight.length > 0) await Promise.race(this.inFlight);
    this.throwIfFailed();
  }

  /** Drops what is buffered and waits for sends in flight, ignoring their outcome. */
  async discard(): Promise<void> {
    this.topics = new Map();
    this.records = 0;
    this.bytes = 0;
    await Promise.allSettled([...this.inFlight]);
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure.error;
  }
}
