import type { RestoredCheckpoint } from "../../checkpoint/checkpoint-storage.ts";
import { ConfigurationError } from "../../errors.ts";
import { DeliveryGuarantee } from "../../guarantee.ts";
import { Collector } from "../../operators/operator.ts";
import type { StreamElement } from "../../records.ts";
import type { SinkContext } from "../../sinks/sink.ts";
import type { Edge, JobGraph, StageNode } from "../api/job-graph.ts";
import { Channel, InputGate, type OutputChannel } from "./channel.ts";
import type { ExecutionOptions } from "./execution.ts";
import { TaskOutput } from "./output.ts";
import {
  globalSubtaskOf,
  keyedStateFor,
  restoredStatesOf,
  sinkStatesFor,
  sourcePositionsFor,
  taskKey,
} from "./restore-assignment.ts";
import { type CheckpointAcknowledger, OperatorTask, SinkTask, SourceTask } from "./tasks.ts";

type Element = StreamElement<unknown>;

/**
 * Which subtasks a group runs, and how it reaches the ones it does not. The single loop runs
 * every subtask; a worker thread runs its share and reaches the others through thread
 * channels (threads/).
 */
export interface TaskShare {
  runs(stage: StageNode, subtask: number): boolean;
  /** The producing half of the channel `edge` from → to, whose consumer runs elsewhere. */
  senderTo(edge: Edge, from: number, to: number): OutputChannel;
  /** The local channel filled from the channel `edge` from → to, whose producer runs elsewhere. */
  receiverFrom(edge: Edge, from: number, to: number): Channel<Element>;
}

/** The whole job in one group: no channel crosses a thread. */
export const wholeJob: TaskShare = {
  runs: () => true,
  senderTo: () => {
    throw new Error("the whole job runs in one group: no channel leaves it");
  },
  receiverFrom: () => {
    throw new Error("the whole job runs in one group: no channel enters it");
  },
};

function labelsOf(stage: StageNode, subtask: number) {
  return { stage: stage.id, subtask };
}

/** The channels of one edge this group touches: [downstream subtask][upstream subtask]. */
type ChannelGrid = Map<Edge, Array<Array<OutputChannel | undefined>>>;

/**
 * The subtasks one group runs (the whole job, or a worker thread's share) with the channels
 * between them: built from the graph with each task's share of the restored state, opened
 * (sinks recover here), run, told of checkpoints, and torn down. What the checkpoint
 * lifecycle does to tasks happens here; deciding it is the coordinator's.
 */
export class TaskGroup {
  readonly sources: SourceTask[] = [];
  readonly operators: OperatorTask[] = [];
  readonly sinks: SinkTask[] = [];
  private readonly graph: JobGraph;
  private readonly options: ExecutionOptions;
  private readonly restored: RestoredCheckpoint | undefined;
  private readonly share: TaskShare;
  private readonly acks: CheckpointAcknowledger;
  private readonly onSourcesFinishing: () => void;
  private readonly cancellable: Array<{ cancel(reason: unknown): void }> = [];
  private readonly gates: InputGate<Element>[] = [];
  private finishingSources = 0;

  constructor(init: {
    graph: JobGraph;
    options: ExecutionOptions;
    restored: RestoredCheckpoint | undefined;
    share: TaskShare;
    acks: CheckpointAcknowledger;
    /** Every source of this group stopped reading and waits for the final checkpoint. */
    onSourcesFinishing: () => void;
  }) {
    this.graph = init.graph;
    this.options = init.options;
    this.restored = init.restored;
    this.share = init.share;
    this.acks = init.acks;
    this.onSourcesFinishing = init.onSourcesFinishing;
    const channels = this.createChannels();
    for (const stage of this.graph.stages) this.createTasks(stage, channels);
  }

  get recordsRead(): number {
    return this.sources.reduce((sum, task) => sum + task.recordsOut, 0);
  }

  get recordsWritten(): number {
    return this.sinks.reduce((sum, task) => sum + task.recordsIn, 0);
  }

  /** The classifiers of this group's sinks and source readers, for the restart strategy. */
  transientClassifiers(): Array<(error: unknown) => boolean> {
    const classifiers: Array<(error: unknown) => boolean> = [];
    for (const { sink } of this.sinks) if (sink.isTransient) classifiers.push(sink.isTransient.bind(sink));
    for (const { reader } of this.sources) if (reader.isTransient) classifiers.push(reader.isTransient.bind(reader));
    return classifiers;
  }

  // ---- building: channels and tasks ---------------------------------------------------------

  /**
   * One bounded channel per (edge, upstream subtask, downstream subtask) this group runs an
   * end of: local when it runs both ends, a thread channel's half when it runs one.
   */
  private createChannels(): ChannelGrid {
    const grid: ChannelGrid = new Map();
    for (const stage of this.graph.stages) {
      for (const edge of stage.inputs) {
        const rows: Array<Array<OutputChannel | undefined>> = [];
        for (let to = 0; to < edge.to.parallelism; to++) {
          const row: Array<OutputChannel | undefined> = [];
          const consumes = this.share.runs(edge.to, to);
          for (let from = 0; from < edge.from.parallelism; from++) {
            const produces = this.share.runs(edge.from, from);
            let channel: OutputChannel | undefined;
            if (consumes && produces) channel = new Channel<Element>(this.options.channelCapacity);
            else if (consumes) channel = this.share.receiverFrom(edge, from, to);
            else if (produces) channel = this.share.senderTo(edge, from, to);
            if (channel) this.cancellable.push(channel);
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
        channels: (channels.get(edge) ?? []).map((row) => row[subtask] as OutputChannel),
      })),
      labelsOf(stage, subtask),
      this.graph,
      this.options.metrics,
    );
  }

  private gateOf(channels: ChannelGrid, stage: StageNode, subtask: number): InputGate<Element> {
    const gate = new InputGate<Element>(
      stage.inputs.flatMap((edge) => (channels.get(edge)?.[subtask] ?? []) as Channel<Element>[]),
    );
    this.gates.push(gate);
    return gate;
  }

  /** The subtasks of one stage this group runs, each given its share of the restored state. */
  private createTasks(stage: StageNode, channels: ChannelGrid): void {
    const old = restoredStatesOf(this.restored, stage);
    for (let subtask = 0; subtask < stage.parallelism; subtask++) {
      if (!this.share.runs(stage, subtask)) continue;
      const key = taskKey(stage, globalSubtaskOf(this.graph, stage, subtask).subtask);
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
    const positions = sourcePositionsFor(old);
    const reader = source.createReader({
      ...globalSubtaskOf(this.graph, stage, subtask),
      restoredPositions: positions,
    });
    return new SourceTask({
      key,
      storage: this.options.storage,
      acks: this.acks,
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
    const global = globalSubtaskOf(this.graph, stage, subtask);
    operator.open({
      ...global,
      maxParallelism: this.graph.maxParallelism,
      ...keyedStateFor(old, global.subtask, global.parallelism, this.graph.maxParallelism),
    });
    return new OperatorTask({
      key,
      storage: this.options.storage,
      acks: this.acks,
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
    const global = globalSubtaskOf(this.graph, stage, subtask);
    const context: SinkContext = {
      sinkId: stage.id,
      ...(restored?.renamed?.[stage.id] === undefined ? {} : { formerSinkId: restored.renamed[stage.id] }),
      ...global,
      previousParallelism: restored?.metadata.stages[stage.id]?.parallelism,
      restoredCheckpointId: restored?.metadata.checkpointId,
      restoredStates: sinkStatesFor(old, global.subtask, global.parallelism),
      allRestoredStates: old.filter((s) => s !== undefined),
      storage: options.storage,
      logger: options.logger,
      ...(options.ownership ? { ownership: options.ownership } : {}),
      checkpointTiming: {
        intervalMs: options.checkpoint.intervalMs,
        timeoutMs: options.checkpoint.timeoutMs,
        restartDelayMs: options.restartDelayMs,
        ...(options.takeoverMs === undefined ? {} : { takeoverMs: options.takeoverMs }),
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
    // A sink that does not say it fences could let a paused owner's writes through after a
    // successor took the shard (I9): refused before it opens, never run and hoped for.
    if (options.ownership && sink.capabilities.fences !== true) {
      throw new ConfigurationError(
        "shard",
        `sink ${stage.id} (${sink.constructor.name}) does not declare capabilities.fences, so it may not run ` +
          `sharded: a paused owner resumed after a successor took its shard could still make writes visible or ` +
          `leave them behind (I9). Run the job unsharded, or fence the sink's writes (docs/writing-a-sink.md, ` +
          `"Fencing") and declare fences: true`,
      );
    }
    return new SinkTask({
      key,
      storage: options.storage,
      acks: this.acks,
      gate: this.gateOf(channels, stage, subtask),
      labels: labelsOf(stage, subtask),
      metrics: options.metrics,
      checkpointing: options.checkpointing,
      sink,
      context,
    });
  }

  // ---- the lifecycle as it reaches the tasks -------------------------------------------------

  /** Recovery (R): readers open, then sinks commit restored pending work and abort the rest (docs/design.md §2). */
  async open(): Promise<void> {
    await Promise.all(this.track(this.sources.map((t) => t.reader.open?.())));
    await Promise.all(this.track(this.sinks.map((t) => t.sink.open(t.context))));
  }

  private readonly opens: Promise<unknown>[] = [];

  private track<T>(calls: Array<Promise<T> | T>): Array<Promise<T> | T> {
    for (const call of calls) if (call instanceof Promise) this.opens.push(call.catch(() => {}));
    return calls;
  }

  /**
   * The opens under way. One failed open fails the attempt at once, while the others may go
   * on (a client retrying its connection): the attempt waits for them too before it closes
   * the sinks, or a client that connects after the close would be left open, holding the
   * process, or recover beside the next attempt.
   */
  openCalls(): readonly Promise<unknown>[] {
    return this.opens;
  }

  /** Every task's run; each settles (never rejects) and reports its failure to `fail`. */
  runTasks(fail: (error: unknown) => void): Promise<void>[] {
    return [
      ...this.sources.map((t) => t.run()),
      ...this.operators.map((t) => t.run()),
      ...this.sinks.map((t) => t.run()),
    ].map((p) => p.catch(fail));
  }

  /** Step 1: barrier n enters at every source subtask of the group. */
  triggerBarriers(checkpointId: number): void {
    for (const source of this.sources) source.triggerBarrier(checkpointId);
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

  /** Graceful stop: sources stop reading and wait for the final checkpoint. */
  requestStop(): void {
    for (const source of this.sources) source.requestStop();
  }

  /** The final checkpoint is complete and committed: sources send end-of-stream. */
  finishSources(): void {
    for (const source of this.sources) source.finish();
  }

  private sourceFinishing(): void {
    this.finishingSources++;
    if (this.finishingSources === this.sources.length) this.onSourcesFinishing();
  }

  /** Releases every task from whatever it waits on, with `reason`. */
  cancel(reason: unknown): void {
    for (const source of this.sources) source.cancel();
    for (const channel of this.cancellable) channel.cancel(reason);
    for (const gate of this.gates) gate.cancel(reason);
  }

  /** Sinks and readers let go of their clients; the first failure is thrown. */
  async close(): Promise<void> {
    const results = await Promise.allSettled([
      ...this.sinks.map((t) => t.sink.close()),
      ...this.sources.map((t) => t.reader.close?.()),
    ]);
    const rejected = results.find((r) => r.status === "rejected");
    if (rejected) throw (rejected as PromiseRejectedResult).reason;
  }
}
