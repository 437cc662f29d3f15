/**
 * Clicks partitioned by click id (as they arrive), summed per user in tumbling event-time
 * windows: the grouping key is not the input's, so the job keys by user across shards,
 * through a Kafka repartition topic (docs/design.md §2, Groups). It runs as two groups of
 * shards: `upstream` reads the input and writes the topic, `downstream` reads the topic,
 * windows and writes the sums to an output topic, each group with its own shards, leases and
 * checkpoints.
 */
import { type JobRuntime, StreamJob, TumblingEventTimeWindows } from "@exactly/core";
import { KafkaSource, kafkaRepartition, kafkaSink } from "@exactly/kafka";

export interface Click {
  readonly id: number;
  readonly user: string;
  readonly amount: number;
  /** Event time, ms. */
  readonly at: number;
}

export interface UserWindow {
  readonly user: string;
  readonly start: number;
  readonly end: number;
  readonly sum: number;
  readonly count: number;
}

const EPOCH = 1_767_225_600_000; // 2026-01-01T00:00:00Z
export const WINDOW_MS = 1000;
/** Partitions of the input topic: a click's partition is its id's, not its user's. */
export const INPUT_PARTITIONS = 4;
/** Partitions of the repartition topic: a multiple of 1, 2, 3 and 6 shards downstream. */
export const REPARTITION_PARTITIONS = 6;
const USERS = 23;

/** The input: deterministic, so a batch computation can say what the output must be. Out of order by up to 150 ms. */
export function click(id: number): Click {
  return { id, user: `user-${(id * 7) % USERS}`, amount: (id * 37) % 100, at: EPOCH + id * 5 + ((id * 53) % 150) };
}

/** The input partition of click `id`: consecutive clicks land on different partitions, whatever their user. */
export function partitionOf(id: number): number {
  return id % INPUT_PARTITIONS;
}

/** Where each input partition ends once `clicks` clicks are written, each partition's from offset 0 in id order. */
export function inputEnds(topic: string, clicks: number): Record<string, number> {
  const ends: Record<string, number> = {};
  for (let p = 0; p < INPUT_PARTITIONS; p++)
    ends[`${topic}:${p}`] = Math.max(0, Math.ceil((clicks - p) / INPUT_PARTITIONS));
  return ends;
}

/** What the job must produce, computed in one batch over the same input: user and window → sum and count. */
export function expectedWindows(clicks: number): Map<string, { sum: number; count: number }> {
  const windows = new Map<string, { sum: number; count: number }>();
  for (let id = 0; id < clicks; id++) {
    const c = click(id);
    const slot = `${c.user}@${c.at - (c.at % WINDOW_MS)}`;
    const w = windows.get(slot) ?? { sum: 0, count: 0 };
    windows.set(slot, { sum: w.sum + c.amount, count: w.count + 1 });
  }
  return windows;
}

export interface ShardedWindowSumConfig {
  readonly brokers: string[];
  readonly input: string;
  /** Clicks in the input: the source stops at their end, written or not yet. */
  readonly clicks: number;
  readonly repartition: string;
  readonly output: string;
  readonly checkpoints: string;
  /** Keep every record of the repartition topic (no DeleteRecords), so that other readers can check it whole. */
  readonly keepRepartitionTopic?: boolean;
}

/** The job, as a module builds it (`exactly run sharded-window-sum.js --group … --shard k/N`). */
export default function shardedWindowSumJob({ params, logger, metrics }: JobRuntime): StreamJob {
  const config = params as unknown as ShardedWindowSumConfig;
  const job = new StreamJob({
    name: "sharded-window-sum",
    parallelism: 1,
    workers: 1,
    logger,
    metrics,
    checkpoint: { storage: config.checkpoints, intervalMs: 100, timeoutMs: 10_000 },
  });
  job
    .fromSource(
      new KafkaSource<Click>({
        brokers: config.brokers,
        topics: [config.input],
        // The runner writes the input while the job runs: the end is where its last click will be.
        stopAtOffsets: inputEnds(config.input, config.clicks),
        deserializer: (record) => JSON.parse(record.value?.toString() ?? "null") as Click,
      }),
      { watermarks: { timestampOf: (c) => c.at, maxOutOfOrdernessMs: 200 } },
    )
    .keyBy((c) => c.user, {
      across: kafkaRepartition<Click>({
        brokers: config.brokers,
        topic: config.repartition,
        partitions: REPARTITION_PARTITIONS,
        transactionTimeoutMs: 60_000,
        ...(config.keepRepartitionTopic ? { retainedCheckpoints: 0 } : {}),
      }),
    })
    .window(TumblingEventTimeWindows.of(WINDOW_MS))
    .aggregate({
      createAccumulator: () => ({ sum: 0, count: 0 }),
      add: (c, acc) => ({ sum: acc.sum + c.amount, count: acc.count + 1 }),
      getResult: (acc) => acc,
    })
    .sinkTo(
      kafkaSink({
        brokers: config.brokers,
        topic: config.output,
        transactionalIdPrefix: `sharded-window-sum-${config.output}`,
        transactionTimeoutMs: 60_000,
        serializer: (w) => ({
          key: `${w.key}@${w.start}`,
          value: JSON.stringify({
            user: w.key,
            start: w.start,
            end: w.end,
            sum: w.value.sum,
            count: w.value.count,
          } satisfies UserWindow),
        }),
      }),
      { name: "user-windows" },
    );
  return job;
}
