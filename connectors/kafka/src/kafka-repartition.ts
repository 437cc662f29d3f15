/**
 * `kafkaRepartition({...})`: a Kafka repartition topic as the log of a keyBy across shards
 * (`keyBy(keyOf, { across })`, docs/design.md §2, Groups), as Kafka Streams routes records
 * between its instances. The group before the keyBy writes every record into the topic with
 * the exactly-once sink, into the partition of its key group; the group after reads the topic
 * read_committed, each subtask the partitions of its key groups, its offsets in its own
 * checkpoints.
 *
 * What other tools read there (docs/connectors/kafka.md, Repartition topics): the key is the
 * record's key as text (`String(key)`), the value the record as JSON (or the bytes `serialize`
 * gives), partition p holds key groups ⌈p·M/P⌉ … ⌈(p+1)·M/P⌉ − 1 (M the job's maxParallelism,
 * P the partitions; a key's group is core's `keyGroupOf`).
 */
import {
  ConfigurationError,
  type Repartition,
  type RepartitionRoute,
  type SinkFactory,
  type Source,
  type SourceReader,
  type SourceReaderContext,
} from "@exactly/core";
import { KafkaSource } from "./kafka-source.ts";
import { KafkaTransactionalSink } from "./kafka-transactional-sink.ts";
import { type KafkaConnectionOptions, openKafkaConnection } from "./open-connection.ts";
import type { KafkaCompression } from "./options.ts";

/** Options of {@link kafkaRepartition}. */
export interface KafkaRepartitionOptions<T> extends KafkaConnectionOptions {
  /** The repartition topic: created with `partitions` if missing, refused if it exists otherwise. */
  readonly topic: string;
  /** Its partitions: a multiple of every shard count the group after it runs at, at most maxParallelism. */
  readonly partitions: number;
  /** The group after the keyBy (`exactly run --group <group>`). Default "downstream". */
  readonly group?: string;
  /** The uid of the hop's sink (and, as `source:<uid>`, of its source). Default `repartition-<topic>`. */
  readonly uid?: string;
  /** Record → the value's bytes. Default JSON. */
  readonly serialize?: (value: T) => Buffer | string;
  /** The value's bytes → record. Default JSON. */
  readonly deserialize?: (bytes: Buffer) => T;
  /** The writer's transactional ids are `<prefix>-<subtask>-<slot>`. Default `exactly-<uid>`. */
  readonly transactionalIdPrefix?: string;
  /** The writer's Kafka transaction timeout. Default 15 minutes, Kafka's default `transaction.max.timeout.ms`. */
  readonly transactionTimeoutMs?: number;
  /** The codec of the record batches the writer sends. Default "none". */
  readonly compression?: KafkaCompression;
}

/**
 * The topic's settings this log needs: records are never compacted away (two records of one
 * key are two records), and never deleted by time or size before the group after has read
 * them; that group deletes what its checkpoints no longer need.
 */
const TOPIC_CONFIGS: Readonly<Record<string, string>> = {
  "cleanup.policy": "delete",
  "retention.ms": "-1",
  "retention.bytes": "-1",
};

const DEFAULT_TRANSACTION_TIMEOUT_MS = 15 * 60 * 1000;

/** A Kafka repartition topic for `keyBy(keyOf, { across: kafkaRepartition({...}) })`. */
export function kafkaRepartition<T>(options: KafkaRepartitionOptions<T>): Repartition<T> {
  if (!options.topic) throw new ConfigurationError("topic", "name the repartition topic");
  if (!options.brokers || options.brokers.length === 0)
    throw new ConfigurationError("brokers", "give the bootstrap servers (`host:port`)");
  const uid = options.uid ?? `repartition-${options.topic}`;
  const serialize = options.serialize ?? ((value: T) => JSON.stringify(value));
  const deserialize = options.deserialize ?? ((bytes: Buffer) => JSON.parse(bytes.toString("utf8")) as T);
  const ensure = () => ensureRepartitionTopic(options);
  return {
    group: options.group ?? "downstream",
    uid,
    partitions: options.partitions,
    writer(route: RepartitionRoute<T>): SinkFactory<T> {
      const sinkOptions = {
        ...connectionOptions(options),
        topic: options.topic,
        transactionalIdPrefix: options.transactionalIdPrefix ?? `exactly-${uid}`,
        transactionTimeoutMs: options.transactionTimeoutMs ?? DEFAULT_TRANSACTION_TIMEOUT_MS,
        ...(options.compression ? { compression: options.compression } : {}),
        serializer: (value: T) => {
          const key = route.keyOf(value);
          return { key: String(key), value: serialize(value), partition: route.partitionOf(key) };
        },
      };
      // Validate once, at job definition, rather than in every subtask.
      new RepartitionWriter<T>(sinkOptions, ensure);
      return () => new RepartitionWriter<T>(sinkOptions, ensure);
    },
    reader(route: RepartitionRoute<T>): Source<T> {
      const source = new KafkaSource<T>({
        ...connectionOptions(options),
        topics: [options.topic],
        name: uid,
        startFrom: "earliest",
        deserializer: (record) => deserialize(record.value ?? Buffer.alloc(0)),
        splitOwner: (partition, context) => route.readsPartition(partition, context),
      });
      return {
        name: source.name,
        bounded: false,
        createReader: (context: SourceReaderContext) => readerAfter(ensure, source.createReader(context)),
      };
    },
  };
}

function connectionOptions(options: KafkaConnectionOptions): KafkaConnectionOptions {
  return {
    brokers: options.brokers,
    ...(options.clientId ? { clientId: options.clientId } : {}),
    ...(options.sasl ? { sasl: options.sasl } : {}),
    ...(options.tls ? { tls: options.tls } : {}),
  };
}

/**
 * Creates the topic, or checks the one the cluster has: another partition count would send
 * keys to partitions another shard reads, and compaction or retention would drop records no
 * one has read. Either is refused, naming `topic`.
 */
async function ensureRepartitionTopic<T>(options: KafkaRepartitionOptions<T>): Promise<void> {
  const connection = openKafkaConnection(connectionOptions(options));
  try {
    await connection.connect();
    const found = await connection.ensureTopic({
      topic: options.topic,
      partitions: options.partitions,
      configs: TOPIC_CONFIGS,
    });
    if (found.partitions !== options.partitions)
      throw new ConfigurationError(
        "topic",
        `repartition topic ${options.topic} has ${found.partitions} partitions, and the job asks for ${options.partitions}: ` +
          "its records are placed by partition, so the count cannot change under a job (give a new topic for a new count)",
      );
    const breaking = Object.entries(TOPIC_CONFIGS).filter(([name, want]) => {
      const have = found.configs[name];
      return have !== undefined && (name === "cleanup.policy" ? have.split(",").includes("compact") : have !== want);
    });
    if (breaking.length > 0)
      throw new ConfigurationError(
        "topic",
        `repartition topic ${options.topic} has ${breaking.map(([name]) => `${name}=${found.configs[name]}`).join(", ")}, ` +
          `which can drop records no one has read: a repartition topic needs ${Object.entries(TOPIC_CONFIGS)
            .map(([n, v]) => `${n}=${v}`)
            .join(", ")} (the group after it deletes what its checkpoints no longer need)`,
      );
  } finally {
    await connection.close();
  }
}

/** The exactly-once Kafka sink, after it made sure of the topic. */
class RepartitionWriter<T> extends KafkaTransactionalSink<T> {
  private readonly ensure: () => Promise<void>;

  constructor(options: ConstructorParameters<typeof KafkaTransactionalSink<T>>[0], ensure: () => Promise<void>) {
    super(options);
    this.ensure = ensure;
  }

  protected override async initialize(restored: Parameters<KafkaTransactionalSink<T>["initialize"]>[0]): Promise<void> {
    await this.ensure();
    await super.initialize(restored);
  }
}

/** `reader`, opened once the topic is there (the group after may start before the group before). */
function readerAfter<T>(ensure: () => Promise<void>, reader: SourceReader<T>): SourceReader<T> {
  return {
    open: async () => {
      await ensure();
      await reader.open?.();
    },
    poll: (maxRecords) => reader.poll(maxRecords),
    snapshotPositions: (checkpointId) => reader.snapshotPositions(checkpointId),
    ...(reader.activeSplits ? { activeSplits: () => reader.activeSplits?.() ?? [] } : {}),
    ...(reader.notifyCheckpointComplete
      ? { notifyCheckpointComplete: (id: number) => reader.notifyCheckpointComplete?.(id) ?? Promise.resolve() }
      : {}),
    ...(reader.close ? { close: () => reader.close?.() ?? Promise.resolve() } : {}),
    ...(reader.isTransient ? { isTransient: (error: unknown) => reader.isTransient?.(error) ?? false } : {}),
  };
}
