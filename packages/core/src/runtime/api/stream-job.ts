import type { CheckpointStorage } from "../../checkpoint/checkpoint-storage.ts";
import { type CheckpointingMode, requireCheckpointingMode } from "../../checkpoint/checkpointing-mode.ts";
import { FileSystemCheckpointStorage } from "../../checkpoint/filesystem-checkpoint-storage.ts";
import { ConfigurationError, requirePositiveInteger } from "../../errors.ts";
import { consoleLogger, type Logger } from "../../logger.ts";
import { type JobMetrics, noMetrics } from "../../metrics.ts";
import { MAX_KEY_GROUPS } from "../../operators/key-groups.ts";
import type { ConditionalRecord } from "../../shards/conditional-record.ts";
import type { JobOwner } from "../../shards/job-owner.ts";
import { describeLocation, LocationOwner } from "../../shards/location-owner.ts";
import { ShardCheckpointStorage } from "../../shards/shard-checkpoint-storage.ts";
import {
  DEFAULT_LEASE_DURATION_MS,
  type LeaseState,
  ShardLease,
  type ShardLeaseOptions,
} from "../../shards/shard-lease.ts";
import { ShardOwner } from "../../shards/shard-owner.ts";
import { globalParallelism, requireShard, type ShardSpec } from "../../shards/shard-spec.ts";
import type { Source } from "../../sources/source.ts";
import type { ExecutionOptions } from "../engine/execution.ts";
import type { JobIdentity } from "../engine/restore-identity.ts";
import { type LaunchRequest, launch, workerThreads } from "../launch.ts";
import type { JobClient, JobEvents, JobResult } from "../runner/job-runner.ts";
import { DEFAULT_MAX_RESTART_DELAY_MS, type RestartStrategy } from "../runner/restart-strategy.ts";
import { DataStream, type StageInput, type StageOptions } from "./data-stream.ts";
import type { Edge, JobGraph, StageNode, WatermarkStrategy } from "./job-graph.ts";
import { originOf } from "./job-origin.ts";
import { FIRST_GROUP, requireGroupName, requirePartitionsFitShards } from "./repartition.ts";

/** Where a job's checkpoints go, and how often and how long one may take. @public */
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

/**
 * What a {@link StreamJob} is built with: its name and id, checkpoints, restart strategy, logger
 * and metrics, and how it is placed (parallelism, worker threads, shards).
 * @public
 */
export interface StreamJobOptions {
  readonly name: string;
  /**
   * The job's identity, stable across restarts, rescales and renames of the job: a checkpoint
   * location holds one job's checkpoints, and a job restores only checkpoints written under
   * its own id (docs/design.md I10). Default: `name`.
   */
  readonly id?: string;
  /**
   * Uids of sources and operators whose checkpointed state this job may start without
   * (Flink's `--allowNonRestoredState`, but naming each one): a checkpoint holding state of a
   * uid the job lacks is otherwise refused. Each one dropped is logged. A sink's state is
   * never dropped: a renamed sink declares `renamedFrom` instead.
   */
  readonly allowNonRestoredState?: readonly string[];
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
  /**
   * Run only shard `index` of `count` (docs/design.md §2, Shards): every stage's subtasks
   * k·parallelism … of count·parallelism, with checkpoints under `<storage>/shard-k/` and an
   * owner's lease with an epoch that fences the previous owner. `exactly run --shard k/N` and
   * {@link loadJob}'s `shard` set it. Undefined: the whole job in this process.
   */
  readonly shard?: ShardSpec;
  /**
   * Run only this group of a job with repartitions (docs/design.md §2, Groups): the stages
   * between two repartitions, with checkpoints under `<storage>/group-<name>/`. `exactly run
   * --group` and {@link loadJob}'s `group` set it. A job with repartitions refuses to run
   * without it; a job without is the one group {@link FIRST_GROUP}.
   */
  readonly group?: string;
  /**
   * The lease this process holds while it runs: a shard's, or, for a job that is not sharded,
   * its checkpoint location's (one job per location at a time). Its timing, and where it lives
   * (default: beside the checkpoints).
   */
  readonly lease?: ShardLeaseSettings;
}

/** Where a job's lease lives and how long it lasts. @public */
export interface ShardLeaseSettings extends ShardLeaseOptions {
  /**
   * The lease record of a shard: S3ConditionalRecord, PostgresConditionalRecord, … A job that
   * is not sharded is shard 0 of 1 here; a job run as groups gets the group too, and each
   * group needs records of its own. Default: beside the checkpoints; a checkpoint storage
   * without conditional records, and no record given, runs unguarded (with a warning).
   */
  readonly record?: (shard: ShardSpec, group?: string) => ConditionalRecord<LeaseState>;
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
 * @public
 */
export class StreamJob {
  readonly options: StreamJobOptions;
  private readonly stages: StageNode[] = [];
  private assignedShard: ShardSpec | undefined;
  private assignedGroup: string | undefined;
  private assignedLease: ShardLeaseOptions | undefined;
  private readonly allowedNonRestored: string[] = [];
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
    if (options.shard) requireShard(options.shard, "shard");
    if (options.group !== undefined) requireGroupName(options.group, "group");
    if (options.id !== undefined && options.id.trim() === "")
      throw new ConfigurationError("id", "must not be empty: it names the job whose checkpoints a location holds");
  }

  /** The job's identity: its name, and the id its checkpoints carry (I10); and the group this process runs, of several. */
  get identity(): JobIdentity {
    const group = this.groups.length > 1 ? this.group : undefined;
    return { name: this.options.name, id: this.options.id ?? this.options.name, ...(group ? { group } : {}) };
  }

  /** The shard this process runs, from the options or from {@link loadJob}; undefined: the whole job. */
  get shard(): ShardSpec | undefined {
    return this.options.shard ?? this.assignedShard;
  }

  /** @internal loadJob's `shard`, for a module that did not pass `runtime.shard` on itself. */
  assignShard(shard: ShardSpec, lease?: ShardLeaseOptions): void {
    const own = this.options.shard;
    if (own && (own.index !== shard.index || own.count !== shard.count))
      throw new ConfigurationError(
        "shard",
        `the job module set shard ${own.index}/${own.count}, and it was loaded as shard ${shard.index}/${shard.count}`,
      );
    this.assignedShard = requireShard(shard, "shard");
    this.assignedLease = lease;
  }

  /** @internal loadJob's `allowNonRestoredState`, beside the options' own. */
  allowNonRestoredState(uids: readonly string[]): void {
    this.allowedNonRestored.push(...uids);
  }

  /** @internal loadJob's `lease` for a job that is not sharded (`exactly run --lease-duration`). */
  assignLease(lease: ShardLeaseOptions): void {
    this.assignedLease = lease;
  }

  private get defaultParallelism(): number {
    return this.options.parallelism ?? 1;
  }

  get maxParallelism(): number {
    return this.options.maxParallelism ?? 128;
  }

  /** @internal */
  addStage(stage: Omit<StageNode, "inputs" | "outputs" | "group"> & { group?: string }, input?: StageInput): StageNode {
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
    const group = input?.from.group ?? stage.group ?? FIRST_GROUP;
    if (input === undefined && stage.group !== undefined && this.stages.some((s) => s.group === group))
      throw new ConfigurationError(
        "group",
        `group "${group}" is led into twice in job ${this.options.name}; name each repartition's group once`,
      );
    this.ids.add(stage.id);
    const node: StageNode = { ...stage, group, inputs: [], outputs: [] };
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
      ...(options.renamedFrom === undefined ? {} : { renamedFrom: options.renamedFrom }),
      kind: "source",
      parallelism: this.parallelismOf(options),
      source,
      ...(options.watermarks ? { watermarks: options.watermarks as WatermarkStrategy<unknown> } : {}),
    });
    return new DataStream<T>(this, stage, []);
  }

  /** The groups of the job's stages, in the order they were made; one for a job without repartitions. */
  get groups(): string[] {
    return [...new Set(this.stages.map((s) => s.group))];
  }

  /** The group this process runs (from the options or loadJob); undefined for a job of one group. */
  get group(): string | undefined {
    return this.options.group ?? this.assignedGroup;
  }

  /** @internal loadJob's `group` (`exactly run --group`). */
  assignGroup(group: string): void {
    if (this.options.group !== undefined && this.options.group !== group)
      throw new ConfigurationError(
        "group",
        `the job module set group "${this.options.group}", and it was loaded as group "${group}"`,
      );
    this.assignedGroup = requireGroupName(group, "group");
  }

  /** The stages this process runs: the selected group's, or all of a job of one group. */
  private groupStages(): { stages: StageNode[]; group?: string } {
    const groups = this.groups;
    const selected = this.group;
    if (selected === undefined) {
      if (groups.length <= 1) return { stages: this.stages };
      throw new ConfigurationError(
        "group",
        `job ${this.options.name} runs as the groups ${groups.map((g) => `"${g}"`).join(", ")}, each in processes of its own: ` +
          "run each one (`exactly run --group <name>`, loadJob's group)",
      );
    }
    if (!groups.includes(selected))
      throw new ConfigurationError(
        "group",
        `job ${this.options.name} has no group "${selected}"; its groups: ${groups.map((g) => `"${g}"`).join(", ")}`,
      );
    const stages = this.stages.filter((s) => s.group === selected);
    return groups.length > 1 ? { stages, group: selected } : { stages };
  }

  /** @internal The job's stages as the engine runs them; refuses a job without a sink, or too wide for its shards. */
  graph(): JobGraph {
    const { stages, group } = this.groupStages();
    const grouped = group === undefined ? {} : { group };
    if (!stages.some((s) => s.kind === "sink"))
      throw new ConfigurationError("sinkTo", `${group === undefined ? "the job" : `group "${group}"`} has no sink`);
    const shard = this.shard;
    if (!shard) return { stages, maxParallelism: this.maxParallelism, ...grouped };
    for (const stage of stages) {
      if (stage.reads) requirePartitionsFitShards(stage.reads.uid, stage.reads.partitions, shard.count);
    }
    for (const stage of stages) {
      if (globalParallelism(shard, stage.parallelism) > this.maxParallelism)
        throw new ConfigurationError(
          "maxParallelism",
          `stage ${stage.id} runs ${stage.parallelism} subtasks in each of ${shard.count} shards, ${globalParallelism(shard, stage.parallelism)} in all, above maxParallelism ${this.maxParallelism}`,
        );
    }
    return { stages, maxParallelism: this.maxParallelism, shard, ...grouped };
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
    const configured = this.groupStorage(graph.group);
    const storage = graph.shard ? new ShardCheckpointStorage(configured, graph.shard) : configured;
    const cp = this.options.checkpoint;
    const base: Omit<ExecutionOptions, "listener"> = {
      jobName: this.options.name,
      job: this.identity,
      checkpoint: {
        intervalMs: cp.intervalMs ?? 1000,
        timeoutMs: cp.timeoutMs ?? 60_000,
        minPauseMs: cp.minPauseMs ?? 0,
      },
      checkpointing: this.options.checkpointing ?? "exactly-once",
      batchSize: requirePositiveInteger("batchSize", this.options.batchSize ?? 1024),
      channelCapacity: requirePositiveInteger("channelCapacity", this.options.channelCapacity ?? 4),
      restartDelayMs: this.options.restart?.maxDelayMs ?? DEFAULT_MAX_RESTART_DELAY_MS,
      ...(graph.shard ? { takeoverMs: this.leaseSettings().durationMs ?? DEFAULT_LEASE_DURATION_MS } : {}),
      storage,
      logger: this.options.logger ?? consoleLogger,
      metrics: this.options.metrics ?? noMetrics,
    };
    return { graph, base, restart: this.options.restart ?? {}, storage };
  }

  /** The checkpoint storage of the job, or of its group `<storage>/group-<name>/` when it runs as groups. */
  private groupStorage(group: string | undefined): CheckpointStorage {
    const cp = this.options.checkpoint;
    const configured = typeof cp.storage === "string" ? new FileSystemCheckpointStorage(cp.storage) : cp.storage;
    if (group === undefined) return configured;
    if (!configured.scoped)
      throw new ConfigurationError(
        "checkpoint.storage",
        "a job run as groups keeps each group's checkpoints in a folder of the location: this storage has none (use a directory or S3CheckpointStorage)",
      );
    return configured.scoped(groupScope(group));
  }

  /** What the launch decision reads from this job. */
  private launchRequest(graph: JobGraph): LaunchRequest {
    return {
      jobName: this.options.name,
      job: this.identity,
      allowNonRestoredState: [...(this.options.allowNonRestoredState ?? []), ...this.allowedNonRestored],
      graph,
      workers: this.options.workers,
      origin: originOf(this),
      checkpointLocation: this.options.checkpoint.storage,
    };
  }

  /** The worker threads `start()` runs the job on; 1 is every subtask on this event loop. */
  workerThreads(): number {
    return workerThreads(this.launchRequest(this.graph()));
  }

  /** Starts the job; the returned client waits for it, stops or cancels it. */
  start(events: JobEvents = {}): JobClient {
    const { graph, ...setup } = this.executionSetup();
    const owner = this.owner(setup.storage, setup.base.logger);
    // The owner's storage refuses to complete a checkpoint once its lease is lost.
    const storage = owner?.storage ?? setup.storage;
    return launch(this.launchRequest(graph), { ...setup, storage, base: { ...setup.base, storage }, owner }, events);
  }

  /** The lease settings: the job's, with what loadJob was given over them. */
  private leaseSettings(): ShardLeaseSettings {
    return { ...this.options.lease, ...this.assignedLease };
  }

  /**
   * What makes this process the one that runs the job's checkpoints: the owner of its shard
   * (lease and checkpoint head), or of its checkpoint location in a job that is not sharded.
   */
  private owner(storage: CheckpointStorage, logger: Logger): JobOwner | undefined {
    const { record: given, ...timing } = this.leaseSettings();
    const group = this.identity.group;
    const record = given && ((shard: ShardSpec) => given(shard, group));
    const job = group === undefined ? this.options.name : `${this.options.name} (group ${group})`;
    // A job that is not sharded is shard 0 of 1 to `lease.record`.
    const unsharded = () => (record ? record({ index: 0, count: 1 }) : storage.record?.<LeaseState>("lease"));
    if (storage instanceof ShardCheckpointStorage) {
      const shard = storage.shard;
      const leaseOf = (index: number) =>
        record ? record({ index, count: shard.count }) : storage.leaseRecordOf(index);
      const lease = new ShardLease(leaseOf(shard.index), { ...timing, count: shard.count, job });
      return new ShardOwner(lease, storage, logger, leaseOf, () => unsharded() ?? storage.unshardedLeaseRecord());
    }
    const configured = this.options.checkpoint.storage;
    const location = describeLocation(storage, typeof configured === "string" ? configured : "the checkpoint storage");
    const leaseRecord = unsharded();
    if (!leaseRecord) {
      logger.warn(
        `checkpoint.storage: ${location} has no conditional records, so nothing keeps a second job off this location while this one runs ` +
          "(both would commit output for the same records); give lease.record to guard it",
      );
      return undefined;
    }
    const lease = new ShardLease(leaseRecord, {
      ...timing,
      job,
      where: `the lease of ${location}`,
      label: "checkpoint location lease",
    });
    return new LocationOwner(lease, storage, location, logger);
  }

  /** Runs a bounded job to its end (or an unbounded one until it fails). */
  execute(events: JobEvents = {}): Promise<JobResult> {
    return this.start(events).result;
  }
}

/** The folder of a group's checkpoints in the job's location. */
export function groupScope(group: string): string {
  return `group-${group}`;
}
