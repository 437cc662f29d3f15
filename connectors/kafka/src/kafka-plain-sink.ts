import {
  type Batch,
  DeliveryGuarantee,
  type Sink,
  type SinkCapabilities,
  type SinkContext,
  SinkNotOpenError,
} from "@exactly/core";
import { reachFault } from "@exactly/core/testing";
import { resolveClient } from "./kafka-config.ts";
import { createCluster, type InternalCluster } from "./kafkajs/cluster.ts";
import { createPlainProducer } from "./kafkajs/producers.ts";
import type { Outbox } from "./outbox.ts";
import { type KafkaWriteOptions, RecordWriter } from "./record-writer.ts";

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
 * Fault points (core's FAULT_POINTS, named after the two-phase lifecycle) are reached at
 * their counterparts here, so the conformance suite's crash scenarios kill this sink at the
 * same moments as the exactly-once one: `after-begin` when a flush window begins (at open,
 * and after a barrier that flushed records), `mid-write` after a batch, `after-pre-commit`
 * after the barrier's flush, `mid-commit` when a checkpoint whose barrier flushed records
 * completes, and `during-recovery-commit` and `during-lingering-abort` when a restore opens
 * the sink (it has nothing to commit or abort there).
 */
export abstract class KafkaPlainSink<T> implements Sink<T> {
  abstract readonly guarantee: DeliveryGuarantee;
  /** No state to spread, so any parallelism restores; no transactions, so nothing lingers. */
  readonly capabilities: SinkCapabilities = { rescale: true, abortsLingering: false };
  private readonly sinkOptions: KafkaWriteOptions<T>;
  private readonly writer: RecordWriter<T>;
  private readonly send: SendSettings;
  private cluster: InternalCluster | undefined;
  private outbox: Outbox | undefined;
  /** Records written since the last barrier that flushed. */
  private unflushed = 0;
  /** Checkpoints whose barrier flushed records and that have not completed yet (for `mid-commit` only). */
  private readonly flushedCheckpoints = new Set<number>();

  protected constructor(options: KafkaWriteOptions<T>, send: SendSettings) {
    this.sinkOptions = options;
    this.writer = new RecordWriter(options);
    this.send = send;
  }

  /** What the barrier waits for, after every record written before it was handed to the outbox. */
  protected abstract atBarrier(outbox: Outbox): Promise<void>;

  async open(context: SinkContext): Promise<void> {
    const kafka = resolveClient(this.sinkOptions);
    const cluster = createCluster(kafka);
    this.cluster = cluster;
    await cluster.connect();
    const producer = await createPlainProducer(kafka, cluster, { idempotent: this.send.idempotent });
    const { acks } = this.send;
    this.outbox = this.writer.outbox((batch) => producer.sendBatch(batch, acks));
    if (context.restoredCheckpointId !== undefined) reachFault("during-recovery-commit");
    reachFault("during-lingering-abort");
    reachFault("after-begin");
  }

  private get openOutbox(): Outbox {
    if (!this.outbox) throw new SinkNotOpenError();
    return this.outbox;
  }

  async writeBatch(batch: Batch<T>): Promise<void> {
    const outbox = this.openOutbox;
    this.unflushed += batch.values.length;
    await this.writer.write(outbox, batch);
    reachFault("mid-write");
  }

  async snapshotState(checkpointId: number): Promise<Record<string, never>> {
    const outbox = this.openOutbox;
    // Nothing written since the last flush: nothing to wait for.
    if (this.unflushed > 0) {
      await this.atBarrier(outbox);
      reachFault("after-pre-commit");
      this.unflushed = 0;
      this.flushedCheckpoints.add(checkpointId);
      reachFault("after-begin");
    }
    return {};
  }

  async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    for (const id of this.flushedCheckpoints) {
      if (id > checkpointId) continue;
      this.flushedCheckpoints.delete(id);
      reachFault("mid-commit");
    }
  }

  async notifyCheckpointAborted(_checkpointId: number): Promise<void> {
    // The next barrier flushes what this one did not cover; nothing waits for a commit.
  }

  /** Records not yet flushed belong to no checkpoint: the replay after a restart writes them again. */
  async close(): Promise<void> {
    const outbox = this.outbox;
    this.outbox = undefined;
    try {
      await outbox?.discard();
    } finally {
      await this.cluster?.disconnect().catch(() => {});
      this.cluster = undefined;
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
