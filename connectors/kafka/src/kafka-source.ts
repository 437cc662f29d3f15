import {
  type Batch,
  ConfigurationError,
  ownsSplit,
  type RecordPosition,
  type Source,
  type SourceReader,
  type SourceReaderContext,
} from "@exactly/core";
import {
  type FetchedRecord,
  type KafkaConnection,
  type KafkaHeaders,
  KafkaOffsetOutOfRangeError,
  KafkaUnknownTopicsError,
  type OffsetSpec,
} from "./kafka-connection.ts";
import { isTransientKafkaFailure, OffsetOutOfRangeError } from "./kafka-errors.ts";
import { type KafkaConnectionOptions, openKafkaConnection } from "./open-connection.ts";

/** A record as read from Kafka (only committed ones: read_committed). */
export interface KafkaRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: KafkaHeaders;
  /** The record's timestamp in ms (CreateTime, or LogAppendTime if the topic says so). */
  readonly timestamp: number;
}

/** Where a split starts when the checkpoint has no position for it. */
export type KafkaStartPosition =
  | "earliest"
  | "latest"
  | { readonly timestamp: number }
  /** The group's committed offsets (`groupId`); partitions without one start at `fallback`. */
  | { readonly groupOffsets: true; readonly fallback?: "earliest" | "latest" };

export interface KafkaSourceOptions<T> extends KafkaConnectionOptions {
  /** Topics to read; their partitions are the source's splits. */
  readonly topics: readonly string[];
  /** Names the source in record positions. Default "kafka". */
  readonly name?: string;
  /** Default "earliest". Ignored for splits whose position the restored checkpoint holds. */
  readonly startFrom?: KafkaStartPosition;
  /**
   * Consumer group the offsets of completed checkpoints are committed to, for lag monitoring
   * only: positions always come from checkpoints. Also the group `startFrom: {groupOffsets}` reads.
   */
  readonly groupId?: string;
  /** Stop at the offsets that are the latest (last stable) when the reader opens: a bounded source. */
  readonly stopAtLatest?: boolean;
  /**
   * Stop each partition at this offset (`"topic:partition"` → offset), as Flink's
   * `setBounded(OffsetsInitializer.offsets(…))`: a bounded source whose end does not move with
   * what is written after it opens, nor between restarts. Every partition read must be named.
   */
  readonly stopAtOffsets?: Readonly<Record<string, number>>;
  /** Record → value. Default: the {@link KafkaRecord} itself. */
  readonly deserializer?: (record: KafkaRecord) => T;
  /** Longest wait of one fetch when no data is there, so idle readers let barriers through. Default 100 ms. */
  readonly maxWaitMs?: number;
  /**
   * Bytes one fetch may return. Default 1 MiB (per partition: 256 KiB). The reader holds one
   * fetch at a time, so these bound its buffer; larger fetches only keep records alive longer.
   */
  readonly maxBytes?: number;
  readonly maxPartitionBytes?: number;
  /**
   * Which subtask reads split i (the topics' partitions in order: topics as given, partitions
   * by number). Default: subtask i mod parallelism. A repartition topic's reader gives each
   * subtask the partitions of its key groups.
   */
  readonly splitOwner?: (splitIndex: number, context: SourceReaderContext) => boolean;
}

/**
 * Reads Kafka topics with read_committed isolation. Partitions are splits, dealt to subtasks
 * in a stable order (topics in the given order, partitions by number); each split's position
 * (the next offset) is checkpointed and restored from the checkpoint, never from the group.
 */
export class KafkaSource<T = KafkaRecord> implements Source<T> {
  readonly name: string;
  readonly bounded: boolean;
  readonly options: KafkaSourceOptions<T>;

  constructor(options: KafkaSourceOptions<T>) {
    if (options.topics.length === 0) throw new ConfigurationError("topics", "name at least one topic");
    if (!options.brokers || options.brokers.length === 0) {
      throw new ConfigurationError("brokers", "give the bootstrap servers (`host:port`)");
    }
    const start = options.startFrom;
    if (typeof start === "object" && "groupOffsets" in start && !options.groupId) {
      throw new ConfigurationError("groupId", "startFrom: { groupOffsets } needs the groupId to read");
    }
    this.options = options;
    this.name = options.name ?? "kafka";
    if (options.stopAtLatest && options.stopAtOffsets)
      throw new ConfigurationError("stopAtOffsets", "give stopAtLatest or stopAtOffsets, not both");
    for (const [split, offset] of Object.entries(options.stopAtOffsets ?? {}))
      if (!Number.isSafeInteger(offset) || offset < 0)
        throw new ConfigurationError("stopAtOffsets", `${split}: an offset is a whole number, got ${offset}`);
    this.bounded = options.stopAtLatest === true || options.stopAtOffsets !== undefined;
  }

  createReader(context: SourceReaderContext): SourceReader<T> {
    return new KafkaSourceReader(this, context);
  }
}

interface Split {
  readonly id: string;
  readonly topic: string;
  readonly partition: number;
  /** The offset after the last record `poll` returned. */
  position: number;
  /** Where the next fetch starts (ahead of `position` while fetched records wait in the buffer). */
  fetchOffset: number;
  /** Bounded: the offset this split stops at. */
  end: number | undefined;
}

interface Chunk {
  readonly split: Split;
  readonly records: FetchedRecord[];
  next: number;
  /** The fetch offset after the whole chunk (past control and aborted records too). */
  readonly after: number;
}

class KafkaSourceReader<T> implements SourceReader<T> {
  private readonly source: KafkaSource<T>;
  private readonly context: SourceReaderContext;
  private readonly deserialize: (record: KafkaRecord) => T;
  private connection: KafkaConnection | undefined;
  private splits: Split[] = [];
  private buffer: Chunk[] = [];
  /** Positions of checkpoints not yet complete, by checkpoint id: the group gets them on completion. */
  private readonly uncommittedSnapshots = new Map<number, Record<string, number>>();

  constructor(source: KafkaSource<T>, context: SourceReaderContext) {
    this.source = source;
    this.context = context;
    this.deserialize = source.options.deserializer ?? ((record) => record as T);
  }

  private get options(): KafkaSourceOptions<T> {
    return this.source.options;
  }

  async open(): Promise<void> {
    // Kept before it connects: a connect that fails half way may hold a socket for close().
    const connection = openKafkaConnection(this.options, { readCommitted: true });
    this.connection = connection;
    await connection.connect();
    const byTopic = await connection.partitions(this.options.topics).catch((error: unknown) => {
      // A restart would not create it: the job fails now, naming the setting and the topic.
      if (error instanceof KafkaUnknownTopicsError) {
        throw new ConfigurationError("topics", `the cluster has no topic ${error.topics.join(", ")}`, { cause: error });
      }
      throw error;
    });
    const all: Array<{ topic: string; partition: number }> = [];
    for (const topic of this.options.topics) {
      const partitions = byTopic.get(topic) ?? [];
      if (partitions.length === 0)
        throw new ConfigurationError("topics", `topic ${topic} has no partitions (does it exist?)`);
      for (const partition of partitions) all.push({ topic, partition });
    }
    const owner = this.source.options.splitOwner ?? ownsSplit;
    const owned = all.filter((_, index) => owner(index, this.context));
    const restored = this.context.restoredPositions;
    const missing = owned.filter((p) => typeof restored?.get(splitId(p.topic, p.partition)) !== "number");
    const starts = await this.startOffsets(missing);
    const ends = this.options.stopAtLatest
      ? await this.listOffsets(owned, "latest")
      : this.options.stopAtOffsets
        ? fixedEnds(owned, this.options.stopAtOffsets)
        : undefined;
    this.splits = owned.map(({ topic, partition }) => {
      const id = splitId(topic, partition);
      const fromCheckpoint = restored?.get(id);
      const position = typeof fromCheckpoint === "number" ? fromCheckpoint : (starts.get(id) as number);
      return { id, topic, partition, position, fetchOffset: position, end: ends?.get(id) };
    });
  }

  private async listOffsets(
    partitions: ReadonlyArray<{ topic: string; partition: number }>,
    at: OffsetSpec,
  ): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    // The connection reads with read_committed, so "latest" is the last stable offset.
    for (const { topic, partition, offset } of await (this.connection as KafkaConnection).listOffsets(partitions, at)) {
      out.set(splitId(topic, partition), offset);
    }
    return out;
  }

  private async startOffsets(
    partitions: ReadonlyArray<{ topic: string; partition: number }>,
  ): Promise<Map<string, number>> {
    const start = this.options.startFrom ?? "earliest";
    if (start === "earliest" || start === "latest") {
      return this.listOffsets(partitions, start);
    }
    if ("timestamp" in start) {
      const byTime = await this.listOffsets(partitions, { timestamp: start.timestamp });
      // No record at or after the timestamp: Kafka answers -1; start at the end then.
      const latest = await this.listOffsets(partitions, "latest");
      for (const [id, offset] of byTime) if (offset < 0) byTime.set(id, latest.get(id) as number);
      return byTime;
    }
    const fallback = await this.listOffsets(partitions, start.fallback ?? "earliest");
    const topics = [...new Set(partitions.map((p) => p.topic))];
    const committed = await (this.connection as KafkaConnection).groupOffsets(this.options.groupId as string, topics);
    for (const { topic, partitions: parts } of committed) {
      for (const { partition, offset } of parts) {
        const id = splitId(topic, partition);
        if (fallback.has(id) && Number(offset) >= 0) fallback.set(id, Number(offset));
      }
    }
    return fallback;
  }

  async poll(maxRecords: number): Promise<Batch<T> | null> {
    if (this.buffer.length === 0) {
      const active = this.splits.filter((s) => s.end === undefined || s.fetchOffset < s.end);
      if (active.length === 0) {
        if (this.source.bounded) return null;
        await new Promise((resolve) => setTimeout(resolve, this.options.maxWaitMs ?? 100));
        return { values: [], positions: [], timestamps: undefined };
      }
      await this.fetch(active);
    }
    const values: T[] = [];
    const positions: RecordPosition[] = [];
    while (values.length < maxRecords && this.buffer.length > 0) {
      const chunk = this.buffer[0] as Chunk;
      const split = chunk.split;
      while (values.length < maxRecords && chunk.next < chunk.records.length) {
        const raw = chunk.records[chunk.next++] as FetchedRecord;
        const offset = raw.offset;
        if (split.end !== undefined && offset >= split.end) {
          chunk.next = chunk.records.length;
          break;
        }
        values.push(
          this.deserialize({
            topic: split.topic,
            partition: split.partition,
            offset,
            key: raw.key,
            value: raw.value,
            headers: raw.headers as KafkaHeaders,
            timestamp: raw.timestamp,
          }),
        );
        positions.push({ source: this.source.name, split: split.id, offset });
        split.position = offset + 1;
      }
      if (chunk.next >= chunk.records.length) {
        // Past the control and aborted records at the chunk's end too (bounded: never past the end).
        split.position = split.end === undefined ? chunk.after : Math.min(chunk.after, split.end);
        this.buffer.shift();
      }
    }
    return { values, positions, timestamps: undefined };
  }

  private async fetch(active: Split[]): Promise<void> {
    let fetched: Awaited<ReturnType<KafkaConnection["fetchCommitted"]>>;
    try {
      fetched = await (this.connection as KafkaConnection).fetchCommitted({
        maxWaitMs: this.options.maxWaitMs ?? 100,
        maxBytes: this.options.maxBytes ?? 1024 * 1024,
        partitions: active.map((s) => ({
          topic: s.topic,
          partition: s.partition,
          fetchOffset: s.fetchOffset,
          maxBytes: this.options.maxPartitionBytes ?? 256 * 1024,
        })),
      });
    } catch (error) {
      if (error instanceof KafkaOffsetOutOfRangeError) {
        throw new OffsetOutOfRangeError(
          this.source.name,
          error.partitions.map((p) => splitId(p.topic, p.partition)),
          { cause: error },
        );
      }
      throw error;
    }
    for (const partition of fetched) {
      const split = this.splits.find((s) => s.topic === partition.topic && s.partition === partition.partition);
      if (!split || partition.nextOffset === undefined) continue;
      const after = Number(partition.nextOffset);
      if (after <= split.fetchOffset) continue;
      split.fetchOffset = after;
      this.buffer.push({ split, records: partition.records, next: 0, after });
    }
  }

  /** Partitions are splits, each with its own watermark; a bounded one drops out at its end. */
  activeSplits(): readonly string[] {
    return this.splits.filter((s) => s.end === undefined || s.position < s.end).map((s) => s.id);
  }

  snapshotPositions(checkpointId: number): Record<string, unknown> {
    const positions: Record<string, number> = {};
    for (const split of this.splits) positions[split.id] = split.position;
    if (this.options.groupId) this.uncommittedSnapshots.set(checkpointId, positions);
    return positions;
  }

  async notifyCheckpointComplete(checkpointId: number): Promise<void> {
    // As Flink does: the group gets the offsets of exactly the completed checkpoint, and the
    // snapshots of it and of earlier checkpoints (subsumed by it) are dropped.
    const positions = this.uncommittedSnapshots.get(checkpointId);
    for (const id of this.uncommittedSnapshots.keys()) if (id <= checkpointId) this.uncommittedSnapshots.delete(id);
    const groupId = this.options.groupId;
    if (!groupId || !positions || !this.connection) return;
    const byTopic = new Map<string, Array<{ partition: number; offset: string }>>();
    for (const split of this.splits) {
      const offset = positions[split.id];
      if (offset === undefined) continue;
      const list = byTopic.get(split.topic) ?? [];
      list.push({ partition: split.partition, offset: String(offset) });
      byTopic.set(split.topic, list);
    }
    try {
      await this.connection.commitGroupOffsets(
        groupId,
        [...byTopic].map(([topic, partitions]) => ({ topic, partitions })),
      );
    } catch {
      // Monitoring only: a failed offset commit never fails the job.
    }
  }

  isTransient(error: unknown): boolean {
    return isTransientKafkaFailure(error);
  }

  async close(): Promise<void> {
    this.buffer = [];
    await this.connection?.close();
    this.connection = undefined;
  }
}

/** `stopAtOffsets` for the partitions this reader owns; refuses a partition it does not name. */
function fixedEnds(
  owned: ReadonlyArray<{ topic: string; partition: number }>,
  offsets: Readonly<Record<string, number>>,
): Map<string, number> {
  const ends = new Map<string, number>();
  for (const { topic, partition } of owned) {
    const id = splitId(topic, partition);
    const end = offsets[id];
    if (end === undefined)
      throw new ConfigurationError("stopAtOffsets", `names no offset for ${id}: every partition read must have one`);
    ends.set(id, end);
  }
  return ends;
}

function splitId(topic: string, partition: number): string {
  return `${topic}:${partition}`;
}

/** A record's value as UTF-8 text, or null. */
export function valueAsString(record: KafkaRecord): string | null {
  return record.value === null ? null : record.value.toString("utf8");
}
