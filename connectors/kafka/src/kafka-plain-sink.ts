import {
  type Batch,
  DeliveryGuarantee,
  FlushingSink,
  type SinkCapabilities,
  type SinkContext,
  SinkNotOpenError,
} from "@exactly/core";
import type { KafkaConnection } from "./kafka-connection.ts";
import { isTransientKafkaFailure } from "./kafka-errors.ts";
import { openKafkaConnection } from "./open-connection.ts";
import type { KafkaWriteOptions } from "./options.ts";
import type { Outbox } from "./outbox.ts";
import { RecordWriter } from "./record-writer.ts";

export interface KafkaAtLeastOnceSinkOptions<T> extends KafkaWriteOptions<T> {
  /** This sink is AT_LEAST_ONCE and nothing else; the field lets {@link kafkaSink}'s options pass as they are. */
  readonly guarantee?: typeof DeliveryGuarantee.AT_LEAST_ONCE;
}

export interface KafkaNoGuaranteeSinkOptions<T> extends KafkaWriteOptions<T> {
  /** This sink is NONE and nothing else; the field lets {@link kafkaSink}'s options pass as they are. */
  readonly guarantee?: typeof DeliveryGuarantee.NONE;
}

/** How the plain producer sends: idempotent or not, and which acknowledgement a send waits for. */
interface SendSettings {
  readonly idempotent: boolean;
  /** -1: every in-sync replica; 1: the leader only. */
  readonly acks: -1 | 1;
}

/**
 * A Kafka sink without transactions, as Flink's KafkaSink is at AT_LEAST_ONCE and NONE: one
 * plain producer per subtask, records sent as they come, and the barrier flushes. Nothing is
 * committed, so there is nothing to recover and nothing lingers: the state is empty, and a
 * restart replays from the restored checkpoint's source positions, which is where the
 * duplicates of at-least-once come from. The subclasses differ only in their producer
 * settings and in what the barrier waits for.
 *
 * Its lifecycle is the conformance suite's "flush": it passes `mid-write` after a batch and
 * `after-pre-commit` after the barrier's flush (the runtime passes
 * `after-checkpoint-durable`); it has no transaction to begin, commit or recover, so it
 * reaches no other fault point.
 */
export abstract class KafkaPlainSink<T> extends FlushingSink<T> {
  /** No state to spread, so any parallelism restores; no transactions, so nothing lingers. */
  override readonly capabilities: SinkCapabilities = { rescale: true, abortsLingering: false, fences: true };
  private readonly sinkOptions: KafkaWriteOptions<T>;
  private readonly writer: RecordWriter<T>;
  private readonly send: SendSettings;
  private connection: KafkaConnection | undefined;
  private outbox: Outbox | undefined;
  /** Records written since the last barrier that flushed. */
  private unflushed = 0;
  protected constructor(options: KafkaWriteOptions<T>, send: SendSettings) {
    super();
    this.sinkOptions = options;
    this.writer = new RecordWriter(options);
    this.send = send;
  }

  /** What the barrier waits for, after every record written before it was handed to the outbox. */
  protected abstract atBarrier(outbox: Outbox): Promise<void>;

  async open(_context: SinkContext): Promise<void> {
    // Kept before it connects: a connect that fails half way may hold a socket for close().
    const connection = openKafkaConnection(this.sinkOptions, { compression: this.sinkOptions.compression });
    this.connection = connection;
    await connection.connect();
    const producer = await connection.plainProducer({ idempotent: this.send.idempotent });
    const { acks } = this.send;
    this.outbox = this.writer.outbox((batch) => producer.sendBatch(batch, acks));
  }

  private get openOutbox(): Outbox {
    if (!this.outbox) throw new SinkNotOpenError();
    return this.outbox;
  }

  protected async write(batch: Batch<T>): Promise<void> {
    const outbox = this.openOutbox;
    this.unflushed += batch.values.length;
    await this.writer.write(outbox, batch);
  }

  protected async flush(_checkpointId: number): Promise<void> {
    const outbox = this.openOutbox;
    // Nothing written since the last flush: nothing to wait for.
    if (this.unflushed > 0) {
      await this.atBarrier(outbox);
      this.unflushed = 0;
    }
  }

  isTransient(error: unknown): boolean {
    return isTransientKafkaFailure(error);
  }

  /** Records not yet flushed belong to no checkpoint: the replay after a restart writes them again. */
  async close(): Promise<void> {
    const outbox = this.outbox;
    this.outbox = undefined;
    try {
      await outbox?.discard();
    } finally {
      await this.connection?.close();
      this.connection = undefined;
    }
  }
}

/**
 * AT_LEAST_ONCE: an idempotent producer (the broker drops the duplicates of its own retries),
 * every in-sync replica acknowledging, and every send acknowledged before the barrier passes,
 * so a completed checkpoint never covers a record Kafka does not hold.
 */
export class KafkaAtLeastOnceSink<T> extends KafkaPlainSink<T> {
  readonly guarantee: DeliveryGuarantee = DeliveryGuarantee.AT_LEAST_ONCE;

  constructor(options: KafkaAtLeastOnceSinkOptions<T>) {
    super(options, { idempotent: true, acks: -1 });
  }

  protected atBarrier(outbox: Outbox): Promise<void> {
    return outbox.flush();
  }
}

/**
 * NONE: a plain producer, the leader acknowledging, and the barrier only dispatches what is
 * buffered without waiting: records of a checkpoint may be lost in a crash.
 */
export class KafkaNoGuaranteeSink<T> extends KafkaPlainSink<T> {
  readonly guarantee: DeliveryGuarantee = DeliveryGuarantee.NONE;

  constructor(options: KafkaNoGuaranteeSinkOptions<T>) {
    super(options, { idempotent: false, acks: 1 });
  }

  protected atBarrier(outbox: Outbox): Promise<void> {
    return outbox.dispatch();
  }
}
