import {
  type CheckpointConfig,
  CheckpointCoordinator,
  type CheckpointListener,
  type CoordinatorTargets,
} from "../checkpoint/checkpoint-coordinator.ts";
import type { CheckpointStorage, RestoredCheckpoint, StoredTaskState } from "../checkpoint/checkpoint-storage.ts";
import type { CheckpointingMode } from "../checkpoint/checkpointing-mode.ts";
import { CancelledError, ConfigurationError } from "../errors.ts";
import { DeliveryGuarantee } from "../guarantee.ts";
import type { Logger } from "../logger.ts";
import type { JobMetrics, TaskLabels } from "../metrics.ts";
import type { KeyedStateSnapshot } from "../operators/keyed-state.ts";
import { Collector } from "../operators/operator.ts";
import type { StreamElement } from "../records.ts";
import type { SinkContext } from "../sinks/sink.ts";
import { Channel, InputGate } from "./channel.ts";
import type { Edge, JobGraph, StageNode } from "./job-graph.ts";
import { keyGroupRange } from "./key-groups.ts";
import { TaskOutput } from "./output.ts";
import { type CheckpointAcknowledger, OperatorTask, SinkTask, SourceTask } from "./tasks.ts";

type Element = StreamElement<unknown>;
/** Every edge's channels: [downstream subtask][upstream subtask]. */
type ChannelGrid = Map<Edge, Channel<Element>[][]>;

export interface ExecutionListener extends CheckpointListener {
  /** Every sink has recovered (restored work committed, lingering work aborted); records flow. */
  onRunning?(): void;
}

export interface ExecutionOptions {
  readonly jobName: string;
  readonly checkpoint: CheckpointConfig;
  readonly checkpointing: CheckpointingMode;
  readonly batchSize: number;
  readonly channelCapacity: number;
  /** The restart strategy's longest delay, for sinks that check transaction timeouts. */
  readonly restartDelayMs: number;
  readonly storage: CheckpointStorage;
  readonly logger: Logger;
  readonly listener: ExecutionListener;
  readonly metrics: JobMetrics;
}

/** How long a failed attempt waits for its tasks to leave the call they were in. */
const TASK_SETTLE_TIMEOUT_MS = 120_000;

export function taskKey(stage: StageNode, subtask: number): string {
  return `${stage.id}/${subtask}`;
}

function labelsOf(stage: StageNode, subtask: number): TaskLabels {
  return { stage: stage.id, subtask };
}

/** The restored states of one stage, by old subtask index. */
function restoredStatesOf(restored: RestoredCheckpoint | undefined, stage: StageNode): unknown[] {
  if (!restored) return [];
  const old = restored.metadata.stages[stage.id];
  if (!old) return [];
  const states: unknown[] = [];
  for (let i = 0; i < old.parallelism; i++) states.push(restored.states.get(`${stage.id}/${i}`));
  return states;
}

/**
 * One run of a job, from restore to finish or failure. A failure anywhere cancels every
 * task and rejects `run()`; the runner then starts a new execution from the latest
 * complete checkpoint.
 */
export class JobExecution implements CoordinatorTargets, CheckpointAcknowledger {
  private readonly graph: JobGraph;
  private readonly options: ExecutionOptions;
  private readonly restored: RestoredCheckpoint | undefined;
  private readonly sources: SourceTask[] = [];
  private readonly operators: OperatorTask[] = [];
  private readonly sinks: SinkTask[] = [];
  private readonly channels: Channel<Element>[] = [];
  private readonly gates: InputGate<Element>[] = [];
  private readonly expectedTasks = new Set<string>();
  private coordinator: CheckpointCoordinator | undefined;
  private failure: unknown;
  private rejectFailure: ((error: unknown) => void) | undefined;
  private finishingSources = 0;
  private taskRuns: Promise<void>[] = [];
  private stopRequested = false;

  constructor(graph: JobGraph, options: ExecutionOptions, restored: RestoredCheckpoint | undefined) {
    this.graph = graph;
    this.options = options;
    this.restored = restored;
  }

  get recordsRead(): number {
    return this.sources.reduce((sum, task) => sum + task.recordsOut, 0);
  }

  get recordsWritten(): number {
    return this.sinks.reduce((sum, task) => sum + task.recordsIn, 0);
  }

  get checkpointsCompleted(): number {
    return this.coordinator?.completed ?? 0;
  }

  /** The classifiers of this attempt's sinks and source readers, for the restart strategy. */
  transientClassifiers(): Array<(error: unknown) => boolean> {
    const classifiers: Array<(error: unknown) => boolean> = [];
    for (const { sink } of this.sinks) if (sink.isTransient) classifiers.push(sink.isTransient.bind(sink));
    for (const { reader } of this.sources) if (reader.isTransient) classifiers.push(reader.isTransient.bind(reader));
    return classifiers;
  }

  /** Test hook: decline the checkpoint in flight. */
  declineInFlightCheckpoint(reason: string): Promise<void> {
    return this.coordinator?.declineInFlight(reason) ?? Promise.resolve();
  }

  /** Graceful stop: stop reading, take a final checkpoint, commit, finish. */
  requestStop(): void {
    this.stopRequested = true;
    for (const source of this.sources) source.requestStop();
  }

  cancel(reason: unknown = new CancelledError()): void {
    this.fail(reason);
  }

  private fail(error: unknown): void {
    if (this.failure !== undefined) return;
    this.failure = error;
    this.coordinator?.stop();
    for (const source of this.sources) source.cancel();
    for (const channel of this.channels) channel.cancel(error);
    for (const gate of this.gates) gate.cancel(error);
    this.rejectFailure?.(error);
  }

  async run(): Promise<void> {
    const failed = new Promise<never>((_, reject) => {
      this.rejectFailure = reject;
    });
    failed.catch(() => {});
    try {
      await this.build();
      await Promise.race([this.openAll(), failed]);
      this.options.listener.onRunning?.();
      if (this.stopRequested) for (const source of this.sources) source.requestStop();
      (this.coordinator as CheckpointCoordinator).start();
      this.taskRuns = [
        ...this.sources.map((t) => t.run()),
        ...this.operators.map((t) => t.run()),
        ...this.sinks.map((t) => t.run()),
      ].map((p) => p.catch((error) => this.fail(error)));
      await Promise.race([Promise.all(this.taskRuns), failed]);
      await Promise.race([(this.coordinator as CheckpointCoordinator).drainNotifications(), failed]);
      if (this.failure !== undefined) throw this.failure;
      await this.closeAll();
    } catch (error) {
      this.fail(error);
      await this.settleTasks();
      await this.closeAll().catch(() => {});
      throw this.failure;
    } finally {
      this.coordinator?.stop();
    }
  }

  // ---- building the execution: channels, tasks, coordinator --------------------------------

  private async build(): Promise<void> {
    const channels = this.createChannels();
    for (const stage of this.graph.stages) this.createTasks(stage, channels);
    this.coordinator = await this.createCoordinator();
  }

  /** One bounded channel per (edge, upstream subtask, downstream subtask). */
  private createChannels(): ChannelGrid {
    const grid: ChannelGrid = new Map();
    for (const stage of this.graph.stages) {
      for (const edge of stage.inputs) {
        const rows: Channel<Element>[][] = [];
        for (let to = 0; to < edge.to.parallelism; to++) {
          const row: Channel<Element>[] = [];
          for (let from = 0; from < edge.from.parallelism; from++) {
            const channel = new Channel<Element>(this.options.channelCapacity);
            this.channels.push(channel);
            row.push(channel);
          }
          rows.push(row);
        }
        grid.set(edge, rows);
      }
    }
    return grid;
  }

  private outputOf(channels: ChannelGrid, stage: StageNode, subtask: number): TaskOutput {
    return new TaskOutput(
      stage.outputs.map((edge) => ({
        edge,
        channels: (channels.get(edge) as Channel<Element>[][]).map((row) => row[subtask] as Channel<Element>),
      })),
      labelsOf(stage, subtask),
      this.graph.maxParallelism,
      this.options.metrics,
    );
  }

  private gateOf(channels: ChannelGrid, stage: StageNode, subtask: number): InputGate<Element> {
    const gate = new InputGate<Element>(
      stage.inputs.flatMap((edge) => (channels.get(edge) as Channel<Element>[][])[subtask] as Channel<Element>[]),
    );
    this.gates.push(gate);
    return gate;
  }

  /** The subtasks of one stage, each given its share of the restored state. */
  private createTasks(stage: StageNode, channels: ChannelGrid): void {
    const old = restoredStatesOf(this.restored, stage);
    for (let subtask = 0; subtask < stage.parallelism; subtask++) {
      const key = taskKey(stage, subtask);
      this.expectedTasks.add(key);
      if (stage.kind === "source" && stage.source) {
        this.sources.push(this.createSourceTask(stage, stage.source, subtask, key, old, channels));
      } else if (stage.kind === "operator" && stage.operator) {
        this.operators.push(this.createOperatorTask(stage, stage.operator, subtask, key, old, channels));
      } else if (stage.kind === "sink" && stage.sink) {
        this.sinks.push(this.createSinkTask(stage, stage.sink, subtask, key, old, channels));
      }
    }
  }

  private createSourceTask(
    stage: StageNode,
    source: NonNullable<StageNode["source"]>,
    subtask: number,
    key: string,
    old: unknown[],
    channels: ChannelGrid,
  ): SourceTask {
    // Splits move freely between subtasks: every old subtask's positions go to the reader,
    // which keeps the splits it owns.
    let positions: Map<string, unknown> | undefined;
    if (this.restored && old.length > 0) {
      positions = new Map();
      for (const state of old)
        for (const [split, position] of Object.entries((state ?? {}) as object)) positions.set(split, position);
    }
    const reader = source.createReader({ subtask, parallelism: stage.parallelism, restoredPositions: positions });
    return new SourceTask({
      key,
      storage: this.options.storage,
      acks: this,
      reader,
      output: this.outputOf(channels, stage, subtask),
      batchSize: this.options.batchSize,
      watermarks: stage.watermarks,
      onFinishing: () => this.sourceFinishing(),
    });
  }

  private createOperatorTask(
    stage: StageNode,
    createOperator: NonNullable<StageNode["operator"]>,
    subtask: number,
    key: string,
    old: unknown[],
    channels: ChannelGrid,
  ): OperatorTask {
    const operator = createOperator();
    // Keyed state is stored by key group; each subtask takes the groups of its range.
    operator.open({
      subtask,
      parallelism: stage.parallelism,
      maxParallelism: this.graph.maxParallelism,
      keyGroups: keyGroupRange(subtask, stage.parallelism, this.graph.maxParallelism),
      restored: old.filter((s) => s !== undefined) as KeyedStateSnapshot[],
    });
    return new OperatorTask({
      key,
      storage: this.options.storage,
      acks: this,
      gate: this.gateOf(channels, stage, subtask),
      labels: labelsOf(stage, subtask),
      metrics: this.options.metrics,
      checkpointing: this.options.checkpointing,
      operator,
      output: this.outputOf(channels, stage, subtask),
      collector: new Collector(false),
    });
  }

  private createSinkTask(
    stage: StageNode,
    createSink: NonNullable<StageNode["sink"]>,
    subtask: number,
    key: string,
    old: unknown[],
    channels: ChannelGrid,
  ): SinkTask {
    const { options, restored } = this;
    // Sink state is a list: old subtask j's state goes to new subtask j mod parallelism.
    const context: SinkContext = {
      sinkId: stage.id,
      subtask,
      parallelism: stage.parallelism,
      previousParallelism: restored?.metadata.stages[stage.id]?.parallelism,
      restoredCheckpointId: restored?.metadata.checkpointId,
      restoredStates: old.filter((s, j) => s !== undefined && j % stage.parallelism === subtask),
      allRestoredStates: old.filter((s) => s !== undefined),
      storage: options.storage,
      logger: options.logger,
      checkpointTiming: {
        intervalMs: options.checkpoint.intervalMs,
        timeoutMs: options.checkpoint.timeoutMs,
        restartDelayMs: options.restartDelayMs,
      },
    };
    const sink = createSink();
    // Unaligned barriers put records after a checkpoint into its state, which a restore then
    // replays: no sink can be exactly-once downstream of that (I7).
    if (options.checkpointing === "at-least-once" && sink.guarantee === DeliveryGuarantee.EXACTLY_ONCE) {
      throw new ConfigurationError(
        "checkpointing",
        `sink ${stage.id} has guarantee EXACTLY_ONCE, which at-least-once checkpointing cannot keep: ` +
          `set the job's checkpointing to "exactly-once", or the sink's guarantee to AT_LEAST_ONCE`,
      );
    }
    return new SinkTask({
      key,
      storage: options.storage,
      acks: this,
      gate: this.gateOf(channels, stage, subtask),
      labels: labelsOf(stage, subtask),
      metrics: options.metrics,
      checkpointing: options.checkpointing,
      sink,
      context,
    });
  }

  private async createCoordinator(): Promise<CheckpointCoordinator> {
    const { graph, options, restored } = this;
    // Ids are reserved durably, so the next id is above every id any earlier run reserved.
    const lastCheckpointId = Math.max(
      await options.storage.highestCheckpointId(),
      restored?.metadata.checkpointId ?? 0,
    );
    return new CheckpointCoordinator({
      config: options.checkpoint,
      storage: options.storage,
      expectedTasks: this.expectedTasks,
      lastCheckpointId,
      metadata: {
        jobName: options.jobName,
        maxParallelism: graph.maxParallelism,
        stages: Object.fromEntries(graph.stages.map((s) => [s.id, { parallelism: s.parallelism, kind: s.kind }])),
      },
      targets: this,
      fail: (error) => this.fail(error),
      listener: options.listener,
      metrics: options.metrics,
      logger: options.logger,
    });
  }

  // ---- the coordinator's targets: the checkpoint lifecycle as it reaches the tasks -----------

  /** Step 1: barrier n enters at every source subtask. */
  triggerBarriers(checkpointId: number): void {
    for (const source of this.sources) source.triggerBarrier(checkpointId);
  }

  /** Step 3: a task persisted its state for checkpoint n (tasks call this). */
  acknowledge(checkpointId: number, taskKey: string, stored: StoredTaskState): void {
    this.coordinator?.acknowledge(checkpointId, taskKey, stored);
  }

  declineState(checkpointId: number, taskKey: string, error: unknown): void {
    this.coordinator?.declineState(checkpointId, taskKey, error);
  }

  /** Step 5: n is durable; sinks commit, sources may tell their system how far they got. */
  async notifyComplete(checkpointId: number): Promise<void> {
    await Promise.all([
      ...this.sinks.map((t) => t.notifyComplete(checkpointId)),
      ...this.sources.map((t) => t.reader.notifyCheckpointComplete?.(checkpointId)),
    ]);
  }

  /** Step 6: n was declined. */
  async notifyAborted(checkpointId: number): Promise<void> {
    await Promise.all(this.sinks.map((t) => t.sink.notifyCheckpointAborted(checkpointId)));
  }

  private sourceFinishing(): void {
    this.finishingSources++;
    if (this.finishingSources === this.sources.length) this.finishAfterFinalCheckpoint();
  }

  /**
   * Waits until every cancelled task has left the sink or source call it was in. Without
   * this, a failed attempt's pre-commit or begin could still reach the external system
   * after the next attempt recovered, and fence or abort that attempt's transactions.
   */
  private async settleTasks(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), TASK_SETTLE_TIMEOUT_MS);
    });
    const settled = await Promise.race([Promise.allSettled(this.taskRuns).then(() => "settled" as const), bound]);
    clearTimeout(timer);
    if (settled === "timeout") {
      this.options.logger.warn(
        `tasks of the failed attempt still busy after ${TASK_SETTLE_TIMEOUT_MS} ms; restarting anyway`,
      );
    }
  }

  private finishAfterFinalCheckpoint(): void {
    (this.coordinator as CheckpointCoordinator).finish().then(
      () => {
        for (const source of this.sources) source.finish();
      },
      (error) => this.fail(error),
    );
  }

  private async openAll(): Promise<void> {
    await Promise.all(this.sources.map((t) => t.reader.open?.()));
    // Sinks recover here: commit restored pending work, abort the rest (docs/design.md §2, Recovery).
    await Promise.all(this.sinks.map((t) => t.sink.open(t.context)));
  }

  private async closeAll(): Promise<void> {
    const results = await Promise.allSettled([
      ...this.sinks.map((t) => t.sink.close()),
      ...this.sources.map((t) => t.reader.close?.()),
    ]);
    const rejected = results.find((r) => r.status === "rejected");
    if (rejected && this.failure === undefined) throw (rejected as PromiseRejectedResult).reason;
  }
}
