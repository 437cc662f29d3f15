import type { Key } from "../../operators/key-groups.ts";
import type { KeyedOperator } from "../../operators/operator.ts";
import type { Batch } from "../../records.ts";
import type { ShardSpec } from "../../shards/shard-spec.ts";
import type { SinkFactory } from "../../sinks/sink.ts";
import type { Source } from "../../sources/source.ts";
import type { ExchangeCodec } from "../engine/exchange/exchange-codec.ts";
import type { FIRST_GROUP } from "./repartition.ts";

/** A stateless step (map, filter, flatMap) run inside the producing subtask: no channel hop. */
// biome-ignore lint/suspicious/noExplicitAny: a chain mixes record types step by step
export type ChainStep = (batch: Batch<any>) => Batch<any>;

export type Partitioning =
  | { readonly kind: "forward" }
  | { readonly kind: "rebalance" }
  // biome-ignore lint/suspicious/noExplicitAny: the key selector's input type is erased in the graph
  | { readonly kind: "hash"; readonly keyOf: (value: any) => Key };

/**
 * How event time is read from records and how late a record may come: the watermarks that close
 * event-time windows.
 * @public
 */
export interface WatermarkStrategy<T> {
  /** Event time of a record, in milliseconds. */
  readonly timestampOf: (value: T) => number;
  /** How late a record may arrive after a later one (of the same split) and still count. */
  readonly maxOutOfOrdernessMs: number;
  /**
   * A split with no records for this long stops holding the watermark back until it has
   * records again (Flink's `withIdleness`). Without it, an empty Kafka partition stalls
   * event time. Records the idle split brings later may then be late. When every split is
   * idle, the least watermark of the splits that had records counts. Default: never idle.
   */
  readonly idleTimeoutMs?: number;
}

export interface Edge {
  readonly from: StageNode;
  readonly to: StageNode;
  readonly chain: readonly ChainStep[];
  readonly partitioning: Partitioning;
  /** How the edge's records cross between worker threads; default JSON (exchange/exchange-codec.ts). */
  readonly codec?: ExchangeCodec<unknown>;
}

/** One stage of the job, run as `parallelism` subtasks. */
export interface StageNode {
  /** Stable across runs: checkpointed state is stored under it. */
  readonly id: string;
  /** The uid the stage had before, whose checkpointed state it takes (I10, runtime/engine/restore-identity.ts). */
  readonly renamedFrom?: string;
  readonly kind: "source" | "operator" | "sink";
  /**
   * The group the stage runs in (docs/design.md §2, Groups): a job with a repartition
   * (`keyBy(keyOf, { across })`) runs each group as its own processes. Default
   * {@link FIRST_GROUP}.
   */
  readonly group: string;
  /** A source stage that reads a repartition's log back: which one, and its partitions. */
  readonly reads?: { readonly uid: string; readonly partitions: number };
  readonly parallelism: number;
  // biome-ignore lint/suspicious/noExplicitAny: stages of any record type live in one graph
  readonly source?: Source<any>;
  // biome-ignore lint/suspicious/noExplicitAny: as above
  readonly watermarks?: WatermarkStrategy<any>;
  // biome-ignore lint/suspicious/noExplicitAny: as above
  readonly operator?: () => KeyedOperator<any, any>;
  // biome-ignore lint/suspicious/noExplicitAny: as above
  readonly sink?: SinkFactory<any>;
  readonly inputs: Edge[];
  readonly outputs: Edge[];
}

export interface JobGraph {
  /** The stages of the group this process runs: every stage of a job without repartitions. */
  readonly stages: readonly StageNode[];
  /** The group these stages are, when the job has more than one. */
  readonly group?: string;
  readonly maxParallelism: number;
  /**
   * The shard this process runs, when the job runs as several (docs/design.md §2, Shards): a
   * stage's `parallelism` is then its share, and its subtasks are global subtasks
   * k·parallelism … of N·parallelism. Undefined: the whole job.
   */
  readonly shard?: ShardSpec;
}
