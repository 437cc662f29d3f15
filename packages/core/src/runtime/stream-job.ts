import { availableParallelism } from "node:os";
import type { CheckpointStorage } from "../checkpoint/checkpoint-storage.ts";
import { type CheckpointingMode, requireCheckpointingMode } from "../checkpoint/checkpointing-mode.ts";
import { FileSystemCheckpointStorage } from "../checkpoint/filesystem-checkpoint-storage.ts";
import { ConfigurationError, RecordProcessingError, requirePositiveInteger } from "../errors.ts";
import { consoleLogger, type Logger } from "../logger.ts";
import { type JobMetrics, noMetrics } from "../metrics.ts";
import { type Key, MAX_KEY_GROUPS } from "../operators/key-groups.ts";
import { type KeyedProcessFunction, KeyedProcessOperator } from "../operators/keyed-process.ts";
import type { KeyedOperator } from "../operators/operator.ts";
import {
  type AggregateFunction,
  type TumblingEventTimeWindows,
  WindowOperator,
  type WindowResult,
} from "../operators/window.ts";
import type { Batch, RecordPosition } from "../records.ts";
import type { SinkFactory } from "../sinks/sink.ts";
import type { Source } from "../sources/source.ts";
import type { ExchangeCodec } from "./exchange/exchange-codec.ts";
import type { ExecutionOptions } from "./execution.ts";
import type { ChainStep, Edge, JobGraph, Partitioning, StageNode, WatermarkStrategy } from "./job-graph.ts";
import { type JobOrigin, originOf } from "./job-origin.ts";
import { type ExecutionPlan, type JobClient, type JobEvents, type JobResult, startJob } from "./job-runner.ts";
import { LocalExecution } from "./local-execution.ts";
import { DEFAULT_MAX_RESTART_DELAY_MS, type RestartStrategy } from "./restart-strategy.ts";
import { jobShape, workerCount } from "./threads/placement.ts";
import { ThreadedExecution } from "./threads/threaded-execution.ts";

export interface CheckpointOptions {
  /** Where checkpoints go: a directory (FileSystemCheckpointStorage) or a storage. */
  readonly storage: string | CheckpointStorage;
  /** Default 1000 ms. */
  readonly intervalMs?: number;
  /** Default 60 s. */
  readonly timeoutMs?: number;
  /** Default 0. */
  readonly minPauseMs?: number;
}

export interface StreamJobOptions {
  readonly name: string;
  /** Default parallelism of every stage. Default 1. */
  readonly parallelism?: number;
  /** Number of key groups; fixed for the life of the job's state. Default 128, at most 32,768 (as Flink). */
  readonly maxParallelism?: number;
  readonly checkpoint: CheckpointOptions;
  /**
   * Barrier alignment: "exactly-once" (default) or "at-least-once" (no alignment, lower
   * latency under skew; keyed state may count records twice after a restore, and a sink
   * with the EXACTLY_ONCE guarantee refuses to start). See {@link CheckpointingMode}.
   */
  readonly checkpointing?: CheckpointingMode;
  readonly restart?: RestartStrategy;
  /** Records a source polls at once: the batch size on every channel. Default 1024. */
  readonly batchSize?: number;
  /** Batches a channel holds before the producer waits. Default 4. */
  readonly channelCapacity?: number;
  readonly logger?: Logger;
  /** Where the runtime reports records, checkpoints, commits and restarts (default: nowhere). */
  readonly metrics?: JobMetrics;
  /**
   * Worker threads to run the subtasks on: subtask i of every stage on worker i mod
   * `workers`, so only keyBy and rebalance edges cross threads. Default: the machine's cores
   * (`os.availableParallelism()`) for a job loaded from a module ({@link loadJob}), 1 for a
   * job built inline, whose closures cannot reach another thread (more is refused). Never
   * more than the largest stage's parallelism; 0 or 1 runs every subtask on this event loop.
   */
  readonly workers?: number;
}

export interface StageOptions {
  /** Stable id of the stage's state; defaults to one derived from its place in the job. */
  readonly uid?: string;
  readonly parallelism?: number;
  /**
   * How the records this stage takes in cross between worker threads (Flink's
   * TypeSerializer). Default {@link jsonExchangeCodec}: fast for plain JSON-like objects; records
   * with Dates, Maps or BigInts need {@link structuredExchangeCodec} or a codec of their own.
   */
  // biome-ignore lint/suspicious/noExplicitAny: a codec for the stage's input, whatever its type
  readonly codec?: ExchangeCodec<any>;
}

/**
 * A streaming job: sources, stateless steps, keyed stages and sinks, run with
 * checkpoints and restarted from the latest one after a failure.
 *
 * ```ts
 * const job = new StreamJob({ name: "demo", checkpoint: { storage: "./checkpoints" } });
 * job.fromSource(new GeneratorSource({ count: 1000, generate: (i) => ({ id: i }) }))
 *   .map((r) => ({ ...r, doubled: r.id * 2 }))
 *   .sinkTo(() => new MySink(), { name: "out" });
 * await job.execute();
 * ```
 */
export class StreamJob {
  readonly options: StreamJobOptions;
  private readonly stages: StageNode[] = [];
  private readonly ids = new Set<string>();
  private counter = 0;

  constructor(options: StreamJobOptions) {
    this.options = options;
    requirePositiveInteger("parallelism", options.parallelism ?? 1);
    requirePositiveInteger("maxParallelism", options.maxParallelism ?? 128);
    if ((options.maxParallelism ?? 128) > MAX_KEY_GROUPS)
      throw new ConfigurationError(
        "maxParallelism",
        `must be at most ${MAX_KEY_GROUPS}, got ${options.maxParallelism}`,
      );
    requirePositiveInteger("checkpoint.intervalMs", options.checkpoint.intervalMs ?? 1000);
    requirePositiveInteger("checkpoint.timeoutMs", options.checkpoint.timeoutMs ?? 60_000);
    if ((options.checkpoint.minPauseMs ?? 0) < 0)
      throw new ConfigurationError("checkpoint.minPauseMs", "must not be negative");
    requireCheckpointingMode(options.checkpointing ?? "exactly-once");
    if (options.workers !== undefined && (!Number.isInteger(options.workers) || options.workers < 0))
      throw new ConfigurationError("workers", `must be a whole number of threads, got ${options.workers}`);
  }

  private get defaultParallelism(): number {
    return this.options.parallelism ?? 1;
  }

  get maxParallelism(): number {
    return this.options.maxParallelism ?? 128;
  }

  /** @internal */
  addStage(
    stage: Omit<StageNode, "inputs" | "outputs">,
    input?: {
      from: StageNode;
      chain: readonly ChainStep[];
      partitioning: Partitioning;
      codec?: ExchangeCodec<unknown>;
    },
  ): StageNode {
    if (this.ids.has(stage.id)) {
      const setting = stage.kind === "sink" ? "sink name" : "uid";
      throw new ConfigurationError(
        setting,
        `"${stage.id}" is used twice in job ${this.options.name}; each must be unique`,
      );
    }
    requirePositiveInteger(`parallelism of ${stage.id}`, stage.parallelism);
    if (stage.parallelism > this.maxParallelism) {
      throw new ConfigurationError(
        "maxParallelism",
        `stage ${stage.id} has parallelism ${stage.parallelism} above maxParallelism ${this.maxParallelism}`,
      );
    }
    this.ids.add(stage.id);
    const node: StageNode = { ...stage, inputs: [], outputs: [] };
    if (input) {
      if (input.partitioning.kind === "forward" && input.from.parallelism !== node.parallelism) {
        throw new ConfigurationError(
          "parallelism",
          `forward edge ${input.from.id} → ${node.id} needs equal parallelism`,
        );
      }
      const edge: Edge = {
        from: input.from,
        to: node,
        chain: input.chain,
        partitioning: input.partitioning,
        ...(input.codec ? { codec: input.codec } : {}),
      };
      input.from.outputs.push(edge);
      node.inputs.push(edge);
    }
    this.stages.push(node);
    return node;
  }

  /** @internal */
  nextId(kind: string): string {
    return `${kind}-${++this.counter}`;
  }

  /** @internal */
  parallelismOf(options: StageOptions | undefined): number {
    return options?.parallelism ?? this.defaultParallelism;
  }

  fromSource<T>(source: Source<T>, options: StageOptions & { watermarks?: WatermarkStrategy<T> } = {}): DataStream<T> {
    const stage = this.addStage({
      id: options.uid ?? `source:${source.name}`,
      kind: "source",
      parallelism: this.parallelismOf(options),
      source,
      ...(options.watermarks ? { watermarks: options.watermarks as WatermarkStrategy<unknown> } : {}),
    });
    return new DataStream<T>(this, stage, []);
  }

  graph(): JobGraph {
    if (!this.stages.some((s) => s.kind === "sink")) throw new ConfigurationError("sinkTo", "the job has no sink");
    return { stages: this.stages, maxParallelism: this.maxParallelism };
  }

  /**
   * @internal What every attempt of the job runs with. A worker thread calls it on the job
   * it built again from the module, and so gets its own storage instance, logger and metrics.
   */
  executionSetup(): {
    graph: JobGraph;
    base: Omit<ExecutionOptions, "listener">;
    restart: RestartStrategy;
    storage: CheckpointStorage;
  } {
    const graph = this.graph();
    const cp = this.options.checkpoint;
    const storage = typeof cp.storage === "string" ? new FileSystemCheckpointStorage(cp.storage) : cp.storage;
    const base: Omit<ExecutionOptions, "listener"> = {
      jobName: this.options.name,
      checkpoint: {
        intervalMs: cp.intervalMs ?? 1000,
        timeoutMs: cp.timeoutMs ?? 60_000,
        minPauseMs: cp.minPauseMs ?? 0,
      },
      checkpointing: this.options.checkpointing ?? "exactly-once",
      batchSize: requirePositiveInteger("batchSize", this.options.batchSize ?? 1024),
      channelCapacity: requirePositiveInteger("channelCapacity", this.options.channelCapacity ?? 4),
      restartDelayMs: this.options.restart?.maxDelayMs ?? DEFAULT_MAX_RESTART_DELAY_MS,
      storage,
      logger: this.options.logger ?? consoleLogger,
      metrics: this.options.metrics ?? noMetrics,
    };
    return { graph, base, restart: this.options.restart ?? {}, storage };
  }

  /**
   * The worker threads the job runs on: `workers` (default: every core for a job loaded from
   * a module, one for a job built inline), never more than its largest stage's parallelism.
   * One means every subtask on this event loop.
   */
  private workerCount(graph: JobGraph): { workers: number; origin: JobOrigin | undefined } {
    const origin = originOf(this);
    const asked = this.options.workers ?? (origin ? availableParallelism() : 1);
    const workers = workerCount(graph, asked);
    if (workers > 1 && !origin) {
      throw new ConfigurationError(
        "workers",
        `job ${this.options.name} was built inline, and worker threads cannot share its closures: ` +
          "export a function that builds it from a module and start it with loadJob(module) (or exactly run), " +
          "or set workers to 1",
      );
    }
    return { workers, origin };
  }

  /** The worker threads `start()` runs the job on; 1 is every subtask on this event loop. */
  workerThreads(): number {
    return this.workerCount(this.graph()).workers;
  }

  /** Starts the job; the returned client waits for it, stops or cancels it. */
  start(events: JobEvents = {}): JobClient {
    const { graph, base, restart, storage } = this.executionSetup();
    const { workers, origin } = this.workerCount(graph);
    const plan: ExecutionPlan = {
      maxParallelism: graph.maxParallelism,
      create:
        workers > 1
          ? (options, restored) =>
              new ThreadedExecution(graph, options, restored, {
                origin: origin as JobOrigin,
                workers,
                shape: jobShape(graph, this.options.checkpoint.storage),
              })
          : (options, restored) => new LocalExecution(graph, options, restored),
    };
    return startJob(plan, base, restart, events, base.logger, storage);
  }

  /** Runs a bounded job to its end (or an unbounded one until it fails). */
  execute(events: JobEvents = {}): Promise<JobResult> {
    return this.start(events).result;
  }
}

function stepError(
  stage: string,
  positions: readonly RecordPosition[],
  index: number,
  error: unknown,
): RecordProcessingError {
  return new RecordProcessingError(stage, positions[index], error);
}

/** A stream of records between two stages; stateless steps chain into the producing stage. */
export class DataStream<T> {
  private readonly job: StreamJob;
  private readonly stage: StageNode;
  private readonly chain: readonly ChainStep[];

  /** @internal */
  constructor(job: StreamJob, stage: StageNode, chain: readonly ChainStep[]) {
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

  /** Routes records by key so one subtask owns each key (by key group). */
  keyBy<K extends Key>(keyOf: (value: T) => K): KeyedStream<K, T> {
    return new KeyedStream<K, T>(this.job, this.stage, this.chain, keyOf);
  }

  /** Writes the stream to a sink; `name` must be unique in the job: it prefixes everything the sink creates. */
  sinkTo(factory: SinkFactory<T>, options: StageOptions & { name: string }): void {
    const parallelism = this.job.parallelismOf(options);
    this.job.addStage(
      { id: options.name, kind: "sink", parallelism, sink: factory as SinkFactory<unknown> },
      {
        from: this.stage,
        chain: this.chain,
        partitioning: parallelism === this.stage.parallelism ? { kind: "forward" } : { kind: "rebalance" },
        ...(options.codec ? { codec: options.codec } : {}),
      },
    );
  }
}

export class KeyedStream<K extends Key, T> {
  private readonly job: StreamJob;
  private readonly stage: StageNode;
  private readonly chain: readonly ChainStep[];
  private readonly keyOf: (value: T) => K;

  /** @internal */
  constructor(job: StreamJob, stage: StageNode, chain: readonly ChainStep[], keyOf: (value: T) => K) {
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
