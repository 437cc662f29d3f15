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
 * gives), the timestamp its event time, partition p holds key groups ⌈p·M/P⌉ … ⌈(p+1)·M/P⌉ − 1
 * (M the job's maxParallelism, P the partitions; a key's group is core's `keyGroupOf`).
 *
 * Event time crosses the topic as watermark markers: at every checkpoint each writer (a global
 * subtask of the group before) writes its watermark into every partition, in the transaction
 * of that checkpoint, as a record with the header `exactly-watermark` and the value
 * `{"writer": i, "writers": n, "watermark": w}` (w a number, "end" or null for none yet).
 * A reader takes per partition the least watermark of the n writers once it has one from each,
 * and the least over its partitions. The markers of a partition say how many writers there
 * are, so after a rescale of the group before (whose writers' records all come before the new
 * ones' in every partition: the new owners fence the old transactions first) the reader waits
 * for every new writer and forgets the old ones.
 */
import {
  type Batch,
  ConfigurationError,
  type RecordPosition,
  type Repartition,
  type RepartitionRoute,
  type SinkFactory,
  type Source,
  type SourceReader,
  type SourceReaderContext,
} from "@exactly/core";
import type { KafkaConnection, KafkaHeaders } from "./kafka-connection.ts";
import { type KafkaRecord, KafkaSource } from "./kafka-source.ts";
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
  /**
   * How many completed checkpoints of the group after a reader keeps the records of: it
   * deletes (DeleteRecords) what all of the newest `retainedCheckpoints` it completed are
   * past, so any checkpoint the storage retains can still be restored. At least the checkpoint
   * storage's `retained` (default 3, as the storages'); 0 never deletes.
   */
  readonly retainedCheckpoints?: number;
  /** How often at most a reader deletes, in ms (Kafka Streams' `repartition.purge.interval.ms`). Default 30 s. */
  readonly purgeIntervalMs?: number;
  /**
   * The consumer group the readers commit the offsets of completed checkpoints to, for lag
   * monitoring only (positions come from checkpoints). Default `exactly-<uid>`.
   */
  readonly groupId?: string;
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
  const retained = options.retainedCheckpoints ?? 3;
  if (!Number.isInteger(retained) || retained < 0)
    throw new ConfigurationError("retainedCheckpoints", `must be a whole number, got ${retained}`);
  const purgeIntervalMs = options.purgeIntervalMs ?? 30_000;
  if (!Number.isInteger(purgeIntervalMs) || purgeIntervalMs < 0)
    throw new ConfigurationError("purgeIntervalMs", `must be a whole number of ms, got ${purgeIntervalMs}`);
  const cleanup = (): Cleanup => ({
    retained,
    intervalMs: purgeIntervalMs,
    topic: options.topic,
    open: () => openKafkaConnection(connectionOptions(options)),
  });
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
        eventTimeAsTimestamp: true,
        serializer: (value: T) => {
          if (value instanceof WatermarkMarker) return value.message();
          const key = route.keyOf(value);
          return { key: String(key), value: serialize(value), partition: route.partitionOf(key) };
        },
      };
      // Validate once, at job definition, rather than in every subtask.
      new RepartitionWriter<T>(sinkOptions, ensure, options.partitions);
      return () => new RepartitionWriter<T>(sinkOptions, ensure, options.partitions);
    },
    reader(route: RepartitionRoute<T>): Source<T> {
      const source = new KafkaSource<Fetched<T>>({
        ...connectionOptions(options),
        topics: [options.topic],
        name: uid,
        startFrom: "earliest",
        groupId: options.groupId ?? `exactly-${uid}`,
        deserializer: (record) => fetched(record, deserialize),
        splitOwner: (partition, context) => route.readsPartition(partition, context),
      });
      return {
        name: source.name,
        bounded: false,
        createReader: (context: SourceReaderContext) =>
          new LogReader(ensure, source.createReader(context), context, retained > 0 ? cleanup() : undefined),
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

/** The header that marks a watermark marker; readers that are not exactly's skip records that carry it. */
export const WATERMARK_HEADER = "exactly-watermark";

/** One writer's watermark, written into one partition at a checkpoint. */
class WatermarkMarker {
  readonly partition: number;
  readonly writer: number;
  readonly writers: number;
  readonly watermark: number;

  constructor(partition: number, writer: number, writers: number, watermark: number) {
    this.partition = partition;
    this.writer = writer;
    this.writers = writers;
    this.watermark = watermark;
  }

  message() {
    return {
      key: null,
      value: JSON.stringify({ writer: this.writer, writers: this.writers, watermark: toJson(this.watermark) }),
      headers: { [WATERMARK_HEADER]: "1" },
      partition: this.partition,
    };
  }
}

/** The exactly-once Kafka sink, after it made sure of the topic, with its watermark in every partition at each checkpoint. */
class RepartitionWriter<T> extends KafkaTransactionalSink<T> {
  private readonly ensure: () => Promise<void>;
  private readonly partitions: number;
  private watermark = Number.NEGATIVE_INFINITY;

  constructor(
    options: ConstructorParameters<typeof KafkaTransactionalSink<T>>[0],
    ensure: () => Promise<void>,
    partitions: number,
  ) {
    super(options);
    this.ensure = ensure;
    this.partitions = partitions;
  }

  protected override async initialize(restored: Parameters<KafkaTransactionalSink<T>["initialize"]>[0]): Promise<void> {
    await this.ensure();
    await super.initialize(restored);
  }

  processWatermark(watermark: number): void {
    this.watermark = watermark;
  }

  /** The markers go into the transaction this checkpoint pre-commits, so they are visible with its records, never before. */
  override async snapshotState(checkpointId: number): ReturnType<KafkaTransactionalSink<T>["snapshotState"]> {
    const { subtask, parallelism } = this.context;
    const markers: WatermarkMarker[] = [];
    const positions: RecordPosition[] = [];
    for (let partition = 0; partition < this.partitions; partition++) {
      markers.push(new WatermarkMarker(partition, subtask, parallelism, this.watermark));
      positions.push({ source: "watermark", split: String(partition), offset: checkpointId });
    }
    await this.writeBatch({ values: markers as unknown as T[], positions, timestamps: undefined } as Batch<T>);
    return super.snapshotState(checkpointId);
  }
}

/** A record of the topic as the reader's inner source gives it: a record, or a writer's marker. */
type Fetched<T> =
  | { readonly marker: undefined; readonly value: T; readonly timestamp: number }
  | { readonly marker: { writer: number; writers: number; watermark: number }; readonly partition: number };

function isMarker(headers: KafkaHeaders): boolean {
  return headers[WATERMARK_HEADER] !== undefined;
}

function fetched<T>(record: KafkaRecord, deserialize: (bytes: Buffer) => T): Fetched<T> {
  const bytes = record.value ?? Buffer.alloc(0);
  if (!isMarker(record.headers)) return { marker: undefined, value: deserialize(bytes), timestamp: record.timestamp };
  const parsed = JSON.parse(bytes.toString("utf8")) as {
    writer: number;
    writers: number;
    watermark: number | "end" | null;
  };
  return {
    marker: { writer: parsed.writer, writers: parsed.writers, watermark: fromJson(parsed.watermark) },
    partition: record.partition,
  };
}

/** What a reader deletes, and how many completed checkpoints' records it keeps. */
interface Cleanup {
  readonly retained: number;
  readonly intervalMs: number;
  readonly topic: string;
  /** A connection to delete with, opened at the first deletion. */
  readonly open: () => KafkaConnection;
}

/** Where a checkpoint keeps a partition's marks, beside the positions: `watermark:<topic>:<partition>`. */
const MARKS = "watermark:";

/** A partition's marks in a checkpoint: JSON has no infinities. */
interface SavedMarks {
  readonly writers: number;
  readonly marks: ReadonlyArray<readonly [number, number | "end" | null]>;
  readonly watermark: number | "end" | null;
}

function toJson(w: number): number | "end" | null {
  return w === Number.POSITIVE_INFINITY ? "end" : Number.isFinite(w) ? w : null;
}

function fromJson(w: number | "end" | null): number {
  return w === "end" ? Number.POSITIVE_INFINITY : w === null ? Number.NEGATIVE_INFINITY : w;
}

/** The writers' watermarks seen in one partition. */
interface PartitionTime {
  /** How many writers the latest markers named. */
  writers: number;
  /** Each writer's latest watermark. */
  readonly marks: Map<number, number>;
  /** The partition's event time: never goes back. */
  watermark: number;
}

/**
 * Reads the topic once it is there (the group after may start before the group before),
 * passes records on with their event time, and takes event time from the markers.
 */
class LogReader<T> implements SourceReader<T> {
  private readonly ensure: () => Promise<void>;
  private readonly inner: SourceReader<Fetched<T>>;
  private readonly partitions = new Map<string, PartitionTime>();
  private readonly cleanup: Cleanup | undefined;
  /** Positions of checkpoints taken and not yet complete, by id. */
  private readonly taken = new Map<number, Record<string, unknown>>();
  /** Positions of the newest completed checkpoints since this reader opened, oldest first. */
  private readonly completed: Array<Record<string, unknown>> = [];
  private purger: KafkaConnection | undefined;
  private lastPurge = Number.NEGATIVE_INFINITY;

  private readonly context: SourceReaderContext;

  constructor(
    ensure: () => Promise<void>,
    inner: SourceReader<Fetched<T>>,
    context: SourceReaderContext,
    cleanup: Cleanup | undefined,
  ) {
    this.ensure = ensure;
    this.inner = inner;
    this.context = context;
    this.cleanup = cleanup;
  }

  async open(): Promise<void> {
    await this.ensure();
    await this.inner.open?.();
    // The writers' marks as the checkpoint holds them: past its positions there may be no
    // marker again (the group before may have ended), so they are not learnt anew.
    for (const split of this.inner.activeSplits?.() ?? []) {
      const saved = this.context.restoredPositions?.get(`${MARKS}${split}`) as SavedMarks | undefined;
      if (saved)
        this.partitions.set(split, {
          writers: saved.writers,
          marks: new Map(saved.marks.map(([writer, w]) => [writer, fromJson(w)])),
          watermark: fromJson(saved.watermark),
        });
    }
  }

  async poll(maxRecords: number): Promise<Batch<T> | null> {
    const batch = await this.inner.poll(maxRecords);
    if (batch === null) return null;
    const values: T[] = [];
    const positions: RecordPosition[] = [];
    const timestamps: number[] = [];
    for (let i = 0; i < batch.values.length; i++) {
      const item = batch.values[i] as Fetched<T>;
      const position = batch.positions[i] as RecordPosition;
      if (item.marker === undefined) {
        values.push(item.value);
        positions.push(position);
        timestamps.push(item.timestamp);
      } else {
        this.mark(position.split, item.marker);
      }
    }
    return { values, positions, timestamps };
  }

  private mark(split: string, marker: { writer: number; writers: number; watermark: number }): void {
    let time = this.partitions.get(split);
    if (time === undefined) {
      time = { writers: marker.writers, marks: new Map(), watermark: Number.NEGATIVE_INFINITY };
      this.partitions.set(split, time);
    }
    if (marker.writers !== time.writers) {
      // The group before was rescaled: its old writers' records all came before this one.
      time.writers = marker.writers;
      time.marks.clear();
    }
    time.marks.set(
      marker.writer,
      Math.max(time.marks.get(marker.writer) ?? Number.NEGATIVE_INFINITY, marker.watermark),
    );
    if (time.marks.size < time.writers) return;
    let least = Number.POSITIVE_INFINITY;
    for (const w of time.marks.values()) least = Math.min(least, w);
    if (least > time.watermark) time.watermark = least;
  }

  /** The least event time of the partitions this reader reads; none until each had every writer's marker. */
  watermark(): number | undefined {
    const splits = this.inner.activeSplits?.() ?? [];
    if (splits.length === 0) return undefined;
    let least = Number.POSITIVE_INFINITY;
    for (const split of splits) {
      const time = this.partitions.get(split);
      if (time === undefined) return undefined;
      least = Math.min(least, time.watermark);
    }
    return Number.isFinite(least) || least === Number.POSITIVE_INFINITY ? least : undefined;
  }

  snapshotPositions(checkpointId: number): Record<string, unknown> {
    const positions = this.inner.snapshotPositions(checkpointId);
    for (const [split, time] of this.partitions) {
      const saved: SavedMarks = {
        writers: time.writers,
        marks: [...time.marks].map(([writer, w]) => [writer, toJson(w)]),
        watermark: toJson(time.watermark),
      };
      positions[`${MARKS}${split}`] = saved;
    }
    if (this.cleanup) this.taken.set(checkpointId, positions);
    return positions;
  }

  activeSplits(): readonly string[] {
    return this.inner.activeSplits?.() ?? [];
  }

  async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    await this.inner.notifyCheckpointComplete?.(checkpointId);
    const cleanup = this.cleanup;
    const positions = this.taken.get(checkpointId);
    for (const id of this.taken.keys()) if (id <= checkpointId) this.taken.delete(id);
    if (!cleanup || !positions) return;
    this.completed.push(positions);
    if (this.completed.length > cleanup.retained) this.completed.shift();
    // Until it has completed as many as are retained, an older checkpoint (from before this
    // reader opened) may need records before any of these positions.
    if (this.completed.length < cleanup.retained) return;
    if (performance.now() - this.lastPurge < cleanup.intervalMs) return;
    this.lastPurge = performance.now();
    const offsets: Array<{ partition: number; offset: number }> = [];
    for (const split of Object.keys(positions)) {
      if (split.startsWith(MARKS)) continue;
      const least = Math.min(...this.completed.map((p) => Number(p[split] ?? 0)));
      const partition = Number(split.slice(split.lastIndexOf(":") + 1));
      if (least > 0 && Number.isInteger(partition)) offsets.push({ partition, offset: least });
    }
    if (offsets.length === 0) return;
    try {
      if (!this.purger) {
        this.purger = cleanup.open();
        await this.purger.connect();
      }
      await this.purger.deleteRecordsBefore(cleanup.topic, offsets);
    } catch {
      // Space only: a deletion that fails is done by a later one.
    }
  }

  async close(): Promise<void> {
    await this.purger?.close();
    this.purger = undefined;
    await this.inner.close?.();
  }

  isTransient(error: unknown): boolean {
    return this.inner.isTransient?.(error) ?? false;
  }
}
