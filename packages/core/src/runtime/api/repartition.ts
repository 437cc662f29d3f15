/**
 * A keyBy whose records cross between shards (docs/design.md §2, Groups). The job splits at
 * that edge into two groups, each run as its own processes with its own shards, leases and
 * checkpoints: the group before writes every record, with its key, into a log partitioned
 * by key group (Kafka's repartition topic: `kafkaRepartition` in @exactly/kafka), and the
 * group after reads the log back, each subtask the partitions of its key groups, and routes
 * them by key as any keyBy does. The log is the exchange, so no process waits on another.
 */
import { ConfigurationError } from "../../errors.ts";
import { type Key, keyGroupOf, subtaskForKeyGroup } from "../../operators/key-groups.ts";
import type { SinkFactory } from "../../sinks/sink.ts";
import type { Source, SourceReaderContext } from "../../sources/source.ts";

/** The group of a job's stages before its first repartition: `exactly run --group upstream`. @public */
export const FIRST_GROUP = "upstream";

/**
 * Where a record goes in the log and who reads it back: partition p holds the key groups
 * ⌈p·M/P⌉ … ⌈(p+1)·M/P⌉ − 1 of M, a contiguous range (Flink's rule for subtasks, with
 * partitions for subtasks), and is read by the subtask that owns its first key group. With P
 * a multiple of the shard count, no partition's key groups straddle two shards.
 * @public
 */
export interface RepartitionRoute<T> {
  readonly keyOf: (value: T) => Key;
  readonly maxParallelism: number;
  readonly partitions: number;
  /** The partition a record's key belongs in. */
  partitionOf(key: Key): number;
  /** Whether the reader subtask of `context` reads partition `partition`. */
  readsPartition(partition: number, context: SourceReaderContext): boolean;
}

/**
 * The log a repartition writes and reads (`keyBy(keyOf, { across })`). @public
 */
export interface Repartition<T> {
  /** The group after the hop: its stages run with `exactly run --group <group>`. */
  readonly group: string;
  /** Stable across runs: the hop's sink in the group before and (as `source:<uid>`) its source in the group after. */
  readonly uid: string;
  /** The log's partitions: a multiple of the shard count of the group after, at most maxParallelism. */
  readonly partitions: number;
  /** The sink the group before writes through. */
  writer(route: RepartitionRoute<T>): SinkFactory<T>;
  /** The source the group after reads from. */
  reader(route: RepartitionRoute<T>): Source<T>;
}

/** A group's name is a folder's (`group-<name>`) and a flag's value: letters, digits, `.`, `_` and `-`. */
export function requireGroupName(group: string, setting: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(group))
    throw new ConfigurationError(
      setting,
      `a group's name is letters, digits, ".", "_" and "-" (it names the folder of the group's checkpoints); got ${JSON.stringify(group)}`,
    );
  return group;
}

/** The route of a repartition into `partitions` partitions of `maxParallelism` key groups. */
export function repartitionRoute<T>(
  keyOf: (value: T) => Key,
  maxParallelism: number,
  partitions: number,
): RepartitionRoute<T> {
  if (!Number.isInteger(partitions) || partitions < 1 || partitions > maxParallelism)
    throw new ConfigurationError(
      "partitions",
      `a repartition needs 1 to maxParallelism (${maxParallelism}) partitions, each a range of key groups; got ${partitions}`,
    );
  return {
    keyOf,
    maxParallelism,
    partitions,
    partitionOf: (key) => Math.floor((keyGroupOf(key, maxParallelism) * partitions) / maxParallelism),
    readsPartition: (partition, context) =>
      subtaskForKeyGroup(firstKeyGroup(partition, maxParallelism, partitions), maxParallelism, context.parallelism) ===
      context.subtask,
  };
}

function firstKeyGroup(partition: number, maxParallelism: number, partitions: number): number {
  return Math.ceil((partition * maxParallelism) / partitions);
}

/**
 * Refuses, naming `partitions`, a log whose partitions would straddle two shards of the group
 * that reads it: that group's shards would each need records another shard reads.
 */
export function requirePartitionsFitShards(uid: string, partitions: number, shards: number): void {
  if (partitions % shards !== 0)
    throw new ConfigurationError(
      "partitions",
      `repartition ${uid} has ${partitions} partitions, which ${shards} shards cannot share out (a partition's key groups would belong to two shards): ` +
        `give it a multiple of every shard count the group will run at (for example ${partitions * shards}), or run ${shards} shards that divide ${partitions}`,
    );
}
