/**
 * Clicks per user and minute from a Kafka topic: the Kafka source reads each partition from the
 * offset the checkpoint holds (read_committed), event time comes from the records' Kafka
 * timestamps, kept per partition.
 *
 *   KAFKA_BROKERS=localhost:9092 exactly run src/kafka-clicks-job.ts      (reads topic "clicks"; ./clicks-per-minute)
 */
import { join } from "node:path";
import { type JobRuntime, StreamJob, TumblingEventTimeWindows } from "@exactly/core";
import { localFileSink } from "@exactly/file";
import { KafkaSource } from "@exactly/kafka";

/** A click as the topic holds it (JSON); `at` is the record's Kafka timestamp. */
export interface Click {
  readonly user: string;
  readonly page: string;
  readonly at: number;
}

export default function kafkaClicksJob({ params, logger, metrics }: JobRuntime): StreamJob {
  const dir = (params.dir as string | undefined) ?? ".";
  const brokers =
    (params.brokers as string[] | undefined) ?? (process.env.KAFKA_BROKERS ?? "localhost:9092").split(",");
  const job = new StreamJob({
    name: "clicks-per-minute",
    parallelism: 2,
    ...(params.workers === undefined ? {} : { workers: params.workers as number }),
    checkpoint: { storage: join(dir, "checkpoints"), intervalMs: 200 },
    logger,
    metrics,
  });

  // #region kafka-source
  const clicks = job.fromSource(
    new KafkaSource<Click>({
      brokers,
      topics: [(params.topic as string | undefined) ?? "clicks"],
      // Partitions are the splits; a new job starts at the earliest offsets, a restored one at its checkpoint's.
      startFrom: "earliest",
      // The test reads what the topic holds and stops; a service leaves this out and reads on.
      stopAtLatest: params.bounded === true,
      deserializer: (record) => ({ ...JSON.parse(record.value?.toString() ?? "{}"), at: record.timestamp }),
    }),
    { watermarks: { timestampOf: (click) => click.at, maxOutOfOrdernessMs: 1_000 } },
  );
  // #endregion kafka-source

  clicks
    .keyBy((click) => click.user)
    .window(TumblingEventTimeWindows.of(60_000))
    .aggregate(
      { createAccumulator: () => 0, add: (_, n) => n + 1, getResult: (n) => n },
      { uid: "count-per-user-minute" },
    )
    .sinkTo(() => localFileSink({ directory: join(dir, "clicks-per-minute"), partSuffix: ".jsonl" }), {
      name: "clicks-per-minute",
    });
  return job;
}
