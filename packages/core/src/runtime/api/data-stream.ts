import { ConfigurationError, RecordProcessingError } from "../../errors.ts";
import type { Key } from "../../operators/key-groups.ts";
import { type KeyedProcessFunction, KeyedProcessOperator } from "../../operators/keyed-process.ts";
import type { KeyedOperator } from "../../operators/operator.ts";
import {
  type AggregateFunction,
  type TumblingEventTimeWindows,
  WindowOperator,
  type WindowResult,
} from "../../operators/window.ts";
import type { Batch, RecordPosition } from "../../records.ts";
import type { SinkFactory } from "../../sinks/sink.ts";
import type { Source } from "../../sources/source.ts";
import type { ExchangeCodec } from "../engine/exchange/exchange-codec.ts";
import type { ChainStep, Partitioning, StageNode } from "./job-graph.ts";
import { type Repartition, repartitionRoute, requireGroupName } from "./repartition.ts";

/**
 * Settings of one stage: its uid (and the uid it had before a rename), its parallelism and how its
 * input crosses threads.
 * @public
 */
export interface StageOptions {
  /** Stable id of the stage's state; defaults to one derived from its place in the job. */
  readonly uid?: string;
  /**
   * The uid (a sink's name) this stage had before a rename: it takes that uid's checkpointed
   * state, and a renamed sink commits what the old name pre-committed (docs/design.md I10).
   * Without it, a checkpoint holding state of a uid the job lacks is refused.
   */
  readonly renamedFrom?: string;
  readonly parallelism?: number;
  /**
   * How the records this stage takes in cross between worker threads (Flink's
   * TypeSerializer). Default {@link jsonExchangeCodec}: fast for plain JSON-like objects; records
   * with Dates, Maps or BigInts need {@link structuredExchangeCodec} or a codec of their own.
   */
  // biome-ignore lint/suspicious/noExplicitAny: a codec for the stage's input, whatever its type
  readonly codec?: ExchangeCodec<any>;
}

/** @internal The edge a new stage is fed by: the stage before it, the chained steps, how records are partitioned. */
export interface StageInput {
  readonly from: StageNode;
  readonly chain: readonly ChainStep[];
  readonly partitioning: Partitioning;
  readonly codec?: ExchangeCodec<unknown>;
}

/**
 * @internal What a stream needs of its job to add stages: the job (`StreamJob`) implements it,
 * so the streams do not import the job.
 */
export interface StageBuilder {
  /** Adds a stage in the group of its input's stage, or in `stage.group` (a source). */
  addStage(stage: Omit<StageNode, "inputs" | "outputs" | "group"> & { group?: string }, input?: StageInput): StageNode;
  nextId(kind: string): string;
  parallelismOf(options: StageOptions | undefined): number;
  readonly maxParallelism: number;
}

/** Options of {@link DataStream.keyBy}. @public */
export interface KeyByOptions<T> {
  /**
   * Route the records between shards through this log (a Kafka repartition topic:
   * `kafkaRepartition` in @exactly/kafka): the stages from here on are a group of their own,
   * run as their own shards (docs/design.md §2, Groups). Without it, records cross only
   * between the subtasks of one process, and a sharded job needs its input partitioned by key.
   */
  readonly across?: Repartition<T>;
  /** The parallelism of the source that reads the log back, in the new group. Default: the job's. */
  readonly parallelism?: number;
}

function stepError(
  stage: string,
  positions: readonly RecordPosition[],
  index: number,
  error: unknown,
): RecordProcessingError {
  return new RecordProcessingError(stage, positions[index], error);
}

/** A stream of records between two stages; stateless steps chain into the producing stage. @public */
export class DataStream<T> {
  private readonly job: StageBuilder;
  private readonly stage: StageNode;
  private readonly chain: readonly ChainStep[];

  /** @internal */
  constructor(job: StageBuilder, stage: StageNode, chain: readonly ChainStep[]) {
    this.job = job;
    this.stage = stage;
    this.chain = chain;
  }

  private with<U>(step: ChainStep): DataStream<U> {
    return new DataStream<U>(this.job, this.stage, [...this.chain, step]);
  }

  map<U>(fn: (value: T) => U): DataStream<U> {
    const name = `${this.stage.id}.map`;
    return this.with<U>((batch: Batch<T>) => {
      const { values, positions } = batch;
      const out = new Array<U>(values.length);
      for (let i = 0; i < values.length; i++) {
        try {
          out[i] = fn(values[i] as T);
        } catch (error) {
          throw stepError(name, positions, i, error);
        }
      }
      return { values: out, positions, timestamps: batch.timestamps };
    });
  }

  filter(fn: (value: T) => boolean): DataStream<T> {
    const name = `${this.stage.id}.filter`;
    return this.with<T>((batch: Batch<T>) => {
      const { values, positions, timestamps } = batch;
      const out: Batch<T> = { values: [], positions: [], timestamps: timestamps ? [] : undefined };
      for (let i = 0; i < values.length; i++) {
        let keep: boolean;
        try {
          keep = fn(values[i] as T);
        } catch (error) {
          throw stepError(name, positions, i, error);
        }
        if (!keep) continue;
        out.values.push(values[i] as T);
        out.positions.push(positions[i] as RecordPosition);
        out.timestamps?.push(timestamps?.[i] as number);
      }
      return out;
    });
  }

  flatMap<U>(fn: (value: T) => Iterable<U>): DataStream<U> {
    const name = `${this.stage.id}.flatMap`;
    return this.with<U>((batch: Batch<T>) => {
      const { values, positions, timestamps } = batch;
      const out: Batch<U> = { values: [], positions: [], timestamps: timestamps ? [] : undefined };
      for (let i = 0; i < values.length; i++) {
        try {
          for (const u of fn(values[i] as T)) {
            out.values.push(u);
            out.positions.push(positions[i] as RecordPosition);
            out.timestamps?.push(timestamps?.[i] as number);
          }
        } catch (error) {
          throw stepError(name, positions, i, error);
        }
      }
      return out;
    });
  }

  /**
   * Routes records by key so one subtask owns each key (by key group); with `across`, between
   * the shards of two groups through a log.
   */
  keyBy<K extends Key>(keyOf: (value: T) => K, options: KeyByOptions<T> = {}): KeyedStream<K, T> {
    const across = options.across;
    if (!across) return new KeyedStream<K, T>(this.job, this.stage, this.chain, keyOf);
    requireGroupName(across.group, "group");
    if (across.group === this.stage.group)
      throw new ConfigurationError(
        "group",
        `repartition ${across.uid} leads into group "${across.group}", the group it starts from: name another`,
      );
    const route = repartitionRoute(keyOf as (value: T) => Key, this.job.maxParallelism, across.partitions);
    // The write runs in the producing subtasks (a forward edge): no hop before the log.
    this.job.addStage(
      { id: across.uid, kind: "sink", parallelism: this.stage.parallelism, sink: across.writer(route) },
      { from: this.stage, chain: this.chain, partitioning: { kind: "forward" } },
    );
    const read = this.job.addStage({
      id: `source:${across.uid}`,
      kind: "source",
      group: across.group,
      reads: { uid: across.uid, partitions: across.partitions },
      parallelism: this.job.parallelismOf(options),
      source: across.reader(route) as Source<unknown>,
    });
    return new KeyedStream<K, T>(this.job, read, [], keyOf);
  }

  /** Writes the stream to a sink; `name` must be unique in the job: it prefixes everything the sink creates. */
  sinkTo(factory: SinkFactory<T>, options: StageOptions & { name: string }): void {
    const parallelism = this.job.parallelismOf(options);
    this.job.addStage(
      {
        id: options.name,
        kind: "sink",
        parallelism,
        sink: factory as SinkFactory<unknown>,
        ...(options.renamedFrom === undefined ? {} : { renamedFrom: options.renamedFrom }),
      },
      {
        from: this.stage,
        chain: this.chain,
        partitioning: parallelism === this.stage.parallelism ? { kind: "forward" } : { kind: "rebalance" },
        ...(options.codec ? { codec: options.codec } : {}),
      },
    );
  }
}

/** A stream partitioned by key (`keyBy`): each subtask of the next stage takes the keys of its key groups. @public */
export class KeyedStream<K extends Key, T> {
  private readonly job: StageBuilder;
  private readonly stage: StageNode;
  private readonly chain: readonly ChainStep[];
  private readonly keyOf: (value: T) => K;

  /** @internal */
  constructor(job: StageBuilder, stage: StageNode, chain: readonly ChainStep[], keyOf: (value: T) => K) {
    this.job = job;
    this.stage = stage;
    this.chain = chain;
    this.keyOf = keyOf;
  }

  private operatorStage<OUT>(
    kind: string,
    operator: () => KeyedOperator<T, OUT>,
    options: StageOptions,
  ): DataStream<OUT> {
    const stage = this.job.addStage(
      {
        id: options.uid ?? this.job.nextId(kind),
        ...(options.renamedFrom === undefined ? {} : { renamedFrom: options.renamedFrom }),
        kind: "operator",
        parallelism: this.job.parallelismOf(options),
        operator: operator as () => KeyedOperator<unknown, unknown>,
      },
      {
        from: this.stage,
        chain: this.chain,
        partitioning: { kind: "hash", keyOf: this.keyOf as (v: unknown) => Key },
        ...(options.codec ? { codec: options.codec } : {}),
      },
    );
    return new DataStream<OUT>(this.job, stage, []);
  }

  /** A keyed stage with checkpointed per-key state. */
  process<OUT, S>(fn: KeyedProcessFunction<K, T, OUT, S>, options: StageOptions = {}): DataStream<OUT> {
    return this.operatorStage("process", () => new KeyedProcessOperator(this.keyOf, fn), options);
  }

  window(windows: TumblingEventTimeWindows): WindowedStream<K, T> {
    return new WindowedStream(this, windows);
  }

  /** @internal */
  windowStage<ACC, OUT>(
    windows: TumblingEventTimeWindows,
    aggregate: AggregateFunction<T, ACC, OUT>,
    options: StageOptions,
  ): DataStream<WindowResult<K, OUT>> {
    return this.operatorStage("window", () => new WindowOperator(this.keyOf, windows, aggregate), options);
  }
}

/** A keyed stream cut into event-time windows (`window`); `aggregate` emits one result a key and window. @public */
export class WindowedStream<K extends Key, T> {
  private readonly keyed: KeyedStream<K, T>;
  private readonly windows: TumblingEventTimeWindows;

  /** @internal */
  constructor(keyed: KeyedStream<K, T>, windows: TumblingEventTimeWindows) {
    this.keyed = keyed;
    this.windows = windows;
  }

  aggregate<ACC, OUT>(
    aggregate: AggregateFunction<T, ACC, OUT>,
    options: StageOptions = {},
  ): DataStream<WindowResult<K, OUT>> {
    return this.keyed.windowStage(this.windows, aggregate, options);
  }

  reduce(fn: (a: T, b: T) => T, options: StageOptions = {}): DataStream<WindowResult<K, T>> {
    return this.aggregate<T | null, T>(
      {
        createAccumulator: () => null,
        add: (value, acc) => (acc === null ? value : fn(acc, value)),
        getResult: (acc) => acc as T,
      },
      options,
    );
  }
}
