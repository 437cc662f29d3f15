/**
 * The Kafka bench job as a module (kafka-cases.ts loads it), so that its subtasks can run on
 * worker threads: the pre-filled input topic → the Kafka sink, at the parallelism and on the
 * threads its params say.
 */
import { join } from "node:path";
import { type DeliveryGuarantee, GeneratorSource, type JobRuntime, StreamJob } from "@exactly/core";
import { KafkaSource, kafkaSink, valueAsString } from "@exactly/kafka";
import { benchRecord, pace } from "../bench-protocol.ts";

export interface KafkaBenchParams {
  readonly name: string;
  readonly brokers: string[];
  readonly input: string;
  readonly output: string;
  /** Default: the output topic's name. Processes that share the topic but not a job need their own. */
  readonly transactionalIdPrefix?: string;
  readonly dir: string;
  readonly guarantee: DeliveryGuarantee;
  readonly intervalMs: number;
  readonly parallelism: number;
  readonly workers: number;
  /**
   * Instead of the input topic, this many of the bench's records generated in memory, as the
   * raw baseline and Kafka's ProducerPerformance write them: the sink alone, without the
   * source's fetches.
   */
  readonly generated?: number;
}

/** The shard a case runs as (BENCH_SHARD=k/N), if any: the source then reads the partitions of its subtasks. */
export function benchShard(): { index: number; count: number } | undefined {
  const match = /^(\d+)\/(\d+)$/.exec(process.env.BENCH_SHARD ?? "");
  return match ? { index: Number(match[1]), count: Number(match[2]) } : undefined;
}

export default function kafkaBenchJob({ params, logger }: JobRuntime): StreamJob {
  const p = params as unknown as KafkaBenchParams;
  const job = new StreamJob({
    name: `bench-${p.name}`,
    parallelism: p.parallelism,
    workers: p.workers,
    checkpoint: { storage: join(p.dir, "checkpoints"), intervalMs: p.intervalMs },
    logger,
  });
  job
    .fromSource<string | null>(
      p.generated === undefined
        ? new KafkaSource({
            brokers: p.brokers,
            topics: [p.input],
            stopAtLatest: true,
            deserializer: valueAsString,
          })
        : new GeneratorSource({ count: p.generated, ...pace, generate: (id) => JSON.stringify(benchRecord(id)) }),
    )
    .sinkTo(
      kafkaSink<string | null>({
        brokers: p.brokers,
        topic: p.output,
        guarantee: p.guarantee,
        transactionalIdPrefix: p.transactionalIdPrefix ?? p.output,
        transactionTimeoutMs: 120_000,
        serializer: (value) => ({ value }),
      }),
      { name: "kafka-out" },
    );
  return job;
}
