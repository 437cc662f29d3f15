import type { CheckpointStorage, StoredTaskState } from "../../checkpoint/checkpoint-storage.ts";
import type { CheckpointingMode } from "../../checkpoint/checkpointing-mode.ts";
import type { JobMetrics, TaskLabels } from "../../metrics.ts";
import type { Collector, KeyedOperator } from "../../operators/operator.ts";
import type { Batch, StreamElement } from "../../records.ts";
import type { Sink, SinkContext } from "../../sinks/sink.ts";
import type { SourceReader } from "../../sources/source.ts";
import type { WatermarkStrategy } from "../api/job-graph.ts";
import type { InputGate } from "./channel.ts";
import { IoTurns } from "./io-turns.ts";
import type { TaskOutput } from "./output.ts";
import { SplitWatermarks } from "./split-watermarks.ts";

type Element = StreamElement<unknown>;

/** How a task reports its part of a checkpoint to the coordinator. */
export interface CheckpointAcknowledger {
  acknowledge(checkpointId: number, taskKey: string, stored: StoredTaskState): void;
  /** The task's state for `checkpointId` could not be stored: the checkpoint is declined, the task goes on. */
  declineState(checkpointId: number, taskKey: string, error: unknown): void;
}

interface TaskBase {
  readonly key: string;
  readonly storage: CheckpointStorage;
  readonly acks: CheckpointAcknowledger;
}

async function persistAndAck(task: TaskBase, checkpointId: number, state: unknown): Promise<void> {
  let stored: StoredTaskState;
  try {
    stored = await task.storage.writeTaskState(checkpointId, task.key, state);
  } catch (error) {
    // A full or read-only storage declines this checkpoint; it does not fail the task.
    task.acks.declineState(checkpointId, task.key, error);
    return;
  }
  task.acks.acknowledge(checkpointId, task.key, stored);
}

/**
 * A source subtask: polls its reader, assigns timestamps and watermarks, and injects
 * barriers between batches when the coordinator asks. When the reader ends (or a stop
 * is requested) it stops reading and only answers barriers until the final checkpoint
 * is complete; then it sends end-of-stream.
 */
export class SourceTask implements TaskBase {
  readonly key: string;
  readonly storage: CheckpointStorage;
  readonly acks: CheckpointAcknowledger;
  readonly reader: SourceReader<unknown>;
  private readonly output: TaskOutput;
  private readonly batchSize: number;
  private readonly watermarks: SplitWatermarks | undefined;
  private readonly onFinishing: () => void;
  private readonly barriers: number[] = [];
  private stopRequested = false;
  private finalCheckpointDone = false;
  private cancelled = false;
  private wake: (() => void) | undefined;
  /** A source that always has records would otherwise keep I/O and timers out (see IoTurns). */
  private readonly turns = new IoTurns();
  /** The last watermark the reader gave, without a strategy. */
  private readerWatermark = Number.NEGATIVE_INFINITY;
  recordsOut = 0;

  constructor(init: {
    key: string;
    storage: CheckpointStorage;
    acks: CheckpointAcknowledger;
    reader: SourceReader<unknown>;
    output: TaskOutput;
    batchSize: number;
    watermarks: WatermarkStrategy<unknown> | undefined;
    onFinishing: () => void;
  }) {
    this.key = init.key;
    this.storage = init.storage;
    this.acks = init.acks;
    this.reader = init.reader;
    this.output = init.output;
    this.batchSize = init.batchSize;
    const reader = init.reader;
    this.watermarks = init.watermarks
      ? new SplitWatermarks(init.watermarks, reader.activeSplits ? () => reader.activeSplits?.() ?? [] : undefined)
      : undefined;
    this.onFinishing = init.onFinishing;
  }

  private signal(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  triggerBarrier(checkpointId: number): void {
    this.barriers.push(checkpointId);
    this.signal();
  }

  requestStop(): void {
    this.stopRequested = true;
    this.signal();
  }

  finish(): void {
    this.finalCheckpointDone = true;
    this.signal();
  }

  cancel(): void {
    this.cancelled = true;
    this.signal();
  }

  async run(): Promise<void> {
    let finishing = false;
    for (;;) {
      if (this.cancelled) return;
      while (this.barriers.length > 0) await this.emitBarrier(this.barriers.shift() as number);
      if (finishing) {
        if (this.finalCheckpointDone) {
          await this.output.broadcast({ kind: "end" });
          return;
        }
        await new Promise<void>((resolve) => {
          // A barrier, the final checkpoint's end or a cancel may have come while the barrier
          // above was being emitted: waiting for a wake-up then would wait for nothing.
          if (this.cancelled || this.finalCheckpointDone || this.barriers.length > 0) resolve();
          else this.wake = resolve;
        });
        continue;
      }
      if (this.stopRequested) {
        finishing = true;
        this.onFinishing();
        continue;
      }
      const batch = await this.reader.poll(this.batchSize);
      if (this.cancelled) return;
      if (batch === null) {
        // Like Flink, an exhausted source moves event time to the end, so every window fires
        // before the final checkpoint and its results are committed with it.
        if (this.watermarks || this.reader.watermark)
          await this.output.broadcast({ kind: "watermark", timestamp: Number.POSITIVE_INFINITY });
        finishing = true;
        this.onFinishing();
        continue;
      }
      if (batch.values.length > 0) {
        this.recordsOut += batch.values.length;
        await this.output.emitBatch(this.watermarks ? this.watermarks.assign(batch) : batch);
      }
      // Also after an empty poll: a split may just have turned idle.
      const watermark = this.watermarks ? this.watermarks.advance() : this.readersWatermark();
      if (watermark !== undefined) await this.output.broadcast({ kind: "watermark", timestamp: watermark });
      if (this.turns.due) await this.turns.take();
    }
  }

  /** The reader's own watermark when it advanced (SourceReader.watermark), else undefined. */
  private readersWatermark(): number | undefined {
    const watermark = this.reader.watermark?.();
    if (watermark === undefined || watermark <= this.readerWatermark) return undefined;
    this.readerWatermark = watermark;
    return watermark;
  }

  private async emitBarrier(checkpointId: number): Promise<void> {
    // Positions are taken between batches, so they match exactly what went out before the barrier.
    const positions = this.reader.snapshotPositions(checkpointId);
    await this.output.broadcast({ kind: "barrier", checkpointId });
    await persistAndAck(this, checkpointId, positions);
  }
}

interface InputTaskInit {
  key: string;
  storage: CheckpointStorage;
  acks: CheckpointAcknowledger;
  gate: InputGate<Element>;
  labels: TaskLabels;
  metrics: JobMetrics;
  /** The job's checkpointing mode: aligned barriers ("exactly-once") or none ("at-least-once"). */
  checkpointing: CheckpointingMode;
}

/**
 * The input side shared by operators and sinks: reads the gate, handles barriers as the
 * checkpointing mode says, tracks watermarks per input.
 *
 * "exactly-once" aligns: an input that delivered barrier n is blocked until all have, so the
 * snapshot of n holds exactly the records before n on every input. "at-least-once" does not
 * block: an input that delivered n is read on, and the snapshot is taken once n has come on
 * every input, so it may hold records after n from the faster inputs; they are replayed after
 * a restore from n and counted twice (Flink's CheckpointingMode.AT_LEAST_ONCE).
 */
abstract class InputTask implements TaskBase {
  readonly key: string;
  readonly storage: CheckpointStorage;
  readonly acks: CheckpointAcknowledger;
  readonly labels: TaskLabels;
  protected readonly metrics: JobMetrics;
  private readonly gate: InputGate<Element>;
  private readonly aligned: boolean;
  private aligning: number | undefined;
  private barriersSeen = 0;
  /** Unaligned mode: for each checkpoint under way, the inputs that delivered its barrier. */
  private readonly arrived = new Map<number, Set<number>>();
  private readonly ended: boolean[];
  private endedCount = 0;
  private readonly inputWatermarks: number[];
  private watermark = Number.NEGATIVE_INFINITY;

  constructor(init: InputTaskInit) {
    this.key = init.key;
    this.storage = init.storage;
    this.acks = init.acks;
    this.labels = init.labels;
    this.metrics = init.metrics;
    this.gate = init.gate;
    this.aligned = init.checkpointing === "exactly-once";
    this.ended = new Array(init.gate.inputCount).fill(false);
    this.inputWatermarks = new Array(init.gate.inputCount).fill(Number.NEGATIVE_INFINITY);
  }

  protected abstract onBatch(batch: Batch<unknown>): Promise<void> | void;
  protected abstract onWatermark(watermark: number): Promise<void> | void;
  protected abstract onCheckpoint(checkpointId: number): Promise<void>;
  protected abstract onEnd(): Promise<void>;

  async run(): Promise<void> {
    const inputs = this.gate.inputCount;
    while (this.endedCount < inputs) {
      const { input, element } = await this.gate.take();
      switch (element.kind) {
        case "batch":
          this.metrics.recordsIn(this.labels, element.batch.values.length);
          await this.onBatch(element.batch);
          break;
        case "barrier":
          if (this.aligned) await this.onBarrier(input, element.checkpointId);
          else await this.onUnalignedBarrier(input, element.checkpointId);
          break;
        case "watermark":
          await this.onInputWatermark(input, element.timestamp);
          break;
        case "end":
          this.ended[input] = true;
          this.endedCount++;
          this.gate.block(input);
          break;
      }
    }
    await this.onEnd();
  }

  private async onBarrier(input: number, checkpointId: number): Promise<void> {
    if (this.aligning === undefined) {
      this.aligning = checkpointId;
      this.barriersSeen = 0;
    } else if (this.aligning !== checkpointId) {
      // Channels are FIFO and a blocked input is not read, so this cannot happen.
      throw new Error(`barrier ${checkpointId} arrived while aligning ${this.aligning} on ${this.key}`);
    }
    this.gate.block(input);
    this.barriersSeen++;
    if (this.barriersSeen < this.gate.inputCount - this.endedCount) return;
    this.aligning = undefined;
    await this.onCheckpoint(checkpointId);
    this.gate.unblockAll();
    for (let i = 0; i < this.ended.length; i++) if (this.ended[i]) this.gate.block(i);
  }

  /**
   * A barrier in at-least-once mode: nothing is blocked. Each input's channel is FIFO, so
   * checkpoint n has come on every input before n + 1 has, and snapshots stay in id order.
   * (An input ends only after its source's final checkpoint, so an ended input has delivered
   * every barrier there will be.)
   */
  private async onUnalignedBarrier(input: number, checkpointId: number): Promise<void> {
    const arrived = this.arrived.get(checkpointId) ?? new Set<number>();
    arrived.add(input);
    for (let i = 0; i < this.ended.length; i++) {
      if (!arrived.has(i) && !this.ended[i]) {
        this.arrived.set(checkpointId, arrived);
        return;
      }
    }
    this.arrived.delete(checkpointId);
    await this.onCheckpoint(checkpointId);
  }

  private async onInputWatermark(input: number, timestamp: number): Promise<void> {
    if (timestamp <= (this.inputWatermarks[input] as number)) return;
    this.inputWatermarks[input] = timestamp;
    const combined = Math.min(...this.inputWatermarks);
    if (combined > this.watermark) {
      this.watermark = combined;
      await this.onWatermark(combined);
    }
  }
}

/** A keyed operator subtask: state snapshotted synchronously at the aligned barrier. */
export class OperatorTask extends InputTask {
  private readonly operator: KeyedOperator<unknown, unknown>;
  private readonly output: TaskOutput;
  private readonly collector: Collector<unknown>;

  constructor(
    init: InputTaskInit & {
      operator: KeyedOperator<unknown, unknown>;
      output: TaskOutput;
      collector: Collector<unknown>;
    },
  ) {
    super(init);
    this.operator = init.operator;
    this.output = init.output;
    this.collector = init.collector;
  }

  private async flush(): Promise<void> {
    const out = this.collector.drain();
    if (out) await this.output.emitBatch(out);
  }

  protected async onBatch(batch: Batch<unknown>): Promise<void> {
    this.operator.processBatch(batch, this.collector);
    await this.flush();
  }

  protected async onWatermark(watermark: number): Promise<void> {
    this.operator.processWatermark(watermark, this.collector);
    await this.flush();
    await this.output.broadcast({ kind: "watermark", timestamp: watermark });
  }

  protected async onCheckpoint(checkpointId: number): Promise<void> {
    const state = JSON.parse(this.operator.snapshotState()) as unknown;
    await this.output.broadcast({ kind: "barrier", checkpointId });
    await persistAndAck(this, checkpointId, state);
  }

  protected async onEnd(): Promise<void> {
    await this.output.broadcast({ kind: "end" });
  }
}

/** A sink subtask: batches to `writeBatch`, the aligned barrier to `snapshotState`. */
export class SinkTask extends InputTask {
  readonly sink: Sink<unknown>;
  readonly context: SinkContext;
  recordsIn = 0;

  constructor(init: InputTaskInit & { sink: Sink<unknown>; context: SinkContext }) {
    super(init);
    this.sink = init.sink;
    this.context = init.context;
  }

  protected async onBatch(batch: Batch<unknown>): Promise<void> {
    this.recordsIn += batch.values.length;
    const result = this.sink.writeBatch(batch);
    if (result) await result;
  }

  protected onWatermark(watermark: number): void {
    this.sink.processWatermark?.(watermark);
  }

  protected async onCheckpoint(checkpointId: number): Promise<void> {
    const state = await this.sink.snapshotState(checkpointId);
    this.reportPending();
    await persistAndAck(this, checkpointId, state);
  }

  /** Checkpoint `checkpointId` is durable: the sink commits; its latency and what stays pending are reported. */
  async notifyComplete(checkpointId: number): Promise<void> {
    const start = performance.now();
    await this.sink.notifyCheckpointComplete(checkpointId);
    this.metrics.committed(this.labels, (performance.now() - start) / 1000);
    this.reportPending();
  }

  private reportPending(): void {
    const work = this.sink.pendingWork?.();
    if (work) this.metrics.pendingTransactions(this.labels, work.count, work.oldestStartedAt);
  }

  protected async onEnd(): Promise<void> {}
}
