export { runFixture } from "@exactly/testkit/run-fixture";

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { DeliveryGuarantee, GeneratorSource, StreamJob, silentLogger } from "@exactly/core";
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import kafkajs, { type Kafka } from "kafkajs";
import { MemorySink, MemoryStore } from "../../../packages/core/test/helpers.ts";
import { type KafkaSinkOptions, KafkaSource, kafkaSink, valueAsString } from "../src/index.ts";
import type { KafkaConnection } from "../src/kafka-connection.ts";
import { type KafkaConnectionOptions, openKafkaConnection } from "../src/open-connection.ts";

export function newKafka(brokers: string[]): Kafka {
  return new kafkajs.Kafka({ clientId: "exactly-kafka-test", brokers, logLevel: kafkajs.logLevel.NOTHING });
}

/**
 * Creates a topic and waits for its leaders. Right after CreateTopics a broker may still answer
 * metadata for the new topic with UNKNOWN_TOPIC_OR_PARTITION (its metadata cache lags the
 * controller, more so on a loaded machine); kafkajs's own wait retries only LEADER_NOT_AVAILABLE,
 * so this waits out the other one too, a bounded number of times.
 */
export async function createTopic(kafka: Kafka, topic: string, partitions = 1): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  const unknownTopic = (error: unknown) => (error as { type?: unknown }).type === "UNKNOWN_TOPIC_OR_PARTITION";
  try {
    try {
      await admin.createTopics({
        topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }],
        waitForLeaders: true,
      });
      return;
    } catch (error) {
      if (!unknownTopic(error)) throw error;
    }
    for (let attempt = 1; ; attempt++) {
      await sleep(100 * attempt);
      try {
        const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
        const led = topics[0]?.partitions.filter((p) => p.leader >= 0).length ?? 0;
        if (led === partitions) return;
      } catch (error) {
        if (!unknownTopic(error)) throw error;
      }
      if (attempt >= 20) throw new Error(`topic ${topic} has no leader for every partition after ${attempt} checks`);
    }
  } finally {
    await admin.disconnect();
  }
}

/**
 * Every value a read_committed reader sees on `topic`, read from offset 0 up to each
 * partition's last stable offset (LSO = HWM once no transaction is open, which the tests
 * assert first). Records of aborted transactions and control records are dropped by
 * the port's fetchCommitted. Not kafkajs's consumer: its aborted-transaction filter lets records of
 * interleaved aborted transactions through (see src/protocol/committed-records.ts, withoutAborted).
 */
export async function readCommitted(
  topic: string,
  partitions: number,
  options: { settle?: boolean; brokers?: readonly string[] } = {},
): Promise<string[]> {
  // EndTxn returns before the coordinator has written the commit markers to the partitions;
  // until it has, read_committed readers stop at the open transaction. Wait for that (bounded:
  // a truly lingering transaction is the probe's to report) unless the caller reads mid-run.
  if (options.settle !== false) {
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      const ends = await partitionEnds(topic, partitions, options.brokers);
      if (ends.every((e) => e.lastStableOffset === e.highWatermark)) break;
      await sleep(50);
    }
  }
  const values: string[] = [];
  const connection = await readCommittedConnection(topic, options.brokers);
  try {
    for (let partition = 0; partition < partitions; partition++) {
      await fetchStable(connection, topic, partition, 0n, values);
    }
  } finally {
    await connection.close();
  }
  return values;
}

/** A read_committed connection through the port, with `topic`'s metadata loaded. */
async function readCommittedConnection(
  topic: string,
  brokers: readonly string[] = kafkaBrokers(),
): Promise<KafkaConnection> {
  const connection = openKafkaConnection({ brokers }, { readCommitted: true });
  try {
    await connection.connect();
    await connection.partitions([topic]);
    return connection;
  } catch (error) {
    await connection.close();
    throw error;
  }
}

/** Appends the committed values of one partition from `offset` up to its last stable offset; returns where it stopped. */
async function fetchStable(
  connection: KafkaConnection,
  topic: string,
  partition: number,
  from: bigint,
  values: string[],
): Promise<bigint> {
  let offset = from;
  // The port answers nothing for a partition whose leader it does not know or that moved
  // (a retriable error, metadata refreshed): ask again, for a bounded while.
  let unanswered = 0;
  for (;;) {
    const [fetched] = await connection.fetchCommitted({
      maxWaitMs: 0,
      maxBytes: 4 * 1024 * 1024,
      partitions: [{ topic, partition, fetchOffset: Number(offset), maxBytes: 4 * 1024 * 1024 }],
    });
    if (!fetched) {
      if (++unanswered > 100) throw new Error(`no fetch answer for ${topic}:${partition} after ${unanswered} tries`);
      await sleep(100);
      continue;
    }
    unanswered = 0;
    for (const record of fetched.records) values.push(record.value?.toString() ?? "");
    if (fetched.nextOffset !== undefined) offset = BigInt(fetched.nextOffset);
    const stable = BigInt(fetched.lastStableOffset ?? fetched.highWatermark);
    if (offset >= stable) return offset;
  }
}

/**
 * A read_committed reader that keeps its place, as a consumer does: each read fetches only
 * what became stable since the last one, and returns every value read so far. For a reader
 * that polls a growing topic all through a run (the conformance suite's observer, every
 * 100 ms): reading the whole topic from offset 0 at each poll costs more than the job it
 * watches. Committed records never leave a topic, so what it returns is what a fresh reader
 * would return at that moment, up to the stable offset it reached.
 */
export class CommittedTail {
  private connection: KafkaConnection | undefined;
  private readonly next: bigint[];
  private readonly values: string[] = [];
  private readonly topic: string;
  private readonly brokers: readonly string[] | undefined;

  constructor(topic: string, partitions: number, brokers?: readonly string[]) {
    this.topic = topic;
    this.brokers = brokers;
    this.next = new Array<bigint>(partitions).fill(0n);
  }

  async read(): Promise<readonly string[]> {
    this.connection ??= await readCommittedConnection(this.topic, this.brokers);
    try {
      for (let partition = 0; partition < this.next.length; partition++) {
        // Each partition's values land in order; a fetch that fails keeps its place.
        const fetched: string[] = [];
        this.next[partition] = await fetchStable(
          this.connection,
          this.topic,
          partition,
          this.next[partition] as bigint,
          fetched,
        );
        for (const value of fetched) this.values.push(value);
      }
    } catch (error) {
      await this.close();
      throw error;
    }
    return this.values;
  }

  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    await connection?.close();
  }
}

/** Per partition: high watermark and last stable offset (equal when no transaction is open). */
export async function partitionEnds(
  topic: string,
  partitions: number,
  brokers?: readonly string[],
): Promise<Array<{ partition: number; highWatermark: string; lastStableOffset: string | undefined }>> {
  const connection = await readCommittedConnection(topic, brokers);
  try {
    const out = [];
    for (let partition = 0; partition < partitions; partition++) {
      const [fetched] = await connection.fetchCommitted({
        maxWaitMs: 0,
        maxBytes: 1024,
        partitions: [{ topic, partition, fetchOffset: 0, maxBytes: 1024 }],
      });
      if (!fetched) throw new Error(`no fetch answer for ${topic}:${partition}`);
      out.push({ partition, highWatermark: fetched.highWatermark, lastStableOffset: fetched.lastStableOffset });
    }
    return out;
  } finally {
    await connection.close();
  }
}

/** Lost and duplicated ids among 0…n−1. */
export function exactlyOnceReport(
  counts: Map<number, number>,
  n: number,
): { lost: number[]; duplicated: number[]; phantom: number[] } {
  const lost: number[] = [];
  const duplicated: number[] = [];
  for (let id = 0; id < n; id++) {
    const c = counts.get(id) ?? 0;
    if (c === 0) lost.push(id);
    if (c > 1) duplicated.push(id);
  }
  const phantom = [...counts.keys()].filter((id) => id < 0 || id >= n);
  return { lost, duplicated, phantom };
}

/**
 * One job writes ids 0…records−1 (`{"id":n}`, keyed by id, 20,000 a second) to `topic` through
 * a Kafka sink with `sink`'s options over the defaults (the test broker, exactly once, a
 * prefix of its own, a 120 s transaction timeout), checkpoints every 100 ms, no restart.
 */
export async function writeIds(
  topic: string,
  records: number,
  sink: Partial<KafkaSinkOptions<{ id: number }>> = {},
  job: { parallelism?: number; splits?: number } = {},
): Promise<void> {
  const stream = new StreamJob({
    name: uniqueName("kafka-write-ids"),
    parallelism: job.parallelism ?? 2,
    checkpoint: { storage: await mkdtemp(join(tmpdir(), "exactly-kafka-")), intervalMs: 100 },
    restart: { maxRestarts: 0 },
    logger: silentLogger,
    batchSize: 500,
  });
  stream
    .fromSource(
      new GeneratorSource({
        count: records,
        splits: job.splits ?? 4,
        ratePerSecond: 20_000,
        generate: (id) => ({ id }),
      }),
    )
    .sinkTo(
      kafkaSink<{ id: number }>({
        brokers: kafkaBrokers(),
        topic,
        guarantee: DeliveryGuarantee.EXACTLY_ONCE,
        transactionalIdPrefix: uniqueName("ids"),
        transactionTimeoutMs: 120_000,
        serializer: (r) => ({ key: String(r.id), value: JSON.stringify(r) }),
        ...sink,
      }),
      { name: "kafka-out" },
    );
  await stream.execute();
}

/** Every value of `topic` as one job's KafkaSource reads it to the end, through `connection` (default: the test broker). */
export async function readWithSource(topic: string, connection: KafkaConnectionOptions = {}): Promise<unknown[]> {
  const store = new MemoryStore();
  const job = new StreamJob({
    name: uniqueName("kafka-read"),
    parallelism: 1,
    checkpoint: { storage: await mkdtemp(join(tmpdir(), "exactly-kafka-")), intervalMs: 100 },
    restart: { maxRestarts: 0 },
    logger: silentLogger,
  });
  job
    .fromSource(
      new KafkaSource<string | null>({
        brokers: kafkaBrokers(),
        ...connection,
        topics: [topic],
        stopAtLatest: true,
        deserializer: valueAsString,
      }),
    )
    .sinkTo(() => new MemorySink<string | null>(store), { name: "memory" });
  await job.execute();
  return store.committed;
}
