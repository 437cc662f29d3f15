import type { Batch, RecordPosition } from "../records.ts";
import type { KeyedStateSnapshot } from "./keyed-state.ts";

/** Collects an operator's output into the next batch. */
export class Collector<T> {
  values: T[] = [];
  positions: RecordPosition[] = [];
  timestamps: number[] | undefined;

  constructor(withTimestamps: boolean) {
    this.timestamps = withTimestamps ? [] : undefined;
  }

  emit(value: T, position: RecordPosition, timestamp?: number): void {
    this.values.push(value);
    this.positions.push(position);
    if (timestamp !== undefined) {
      this.timestamps ??= new Array(this.values.length - 1).fill(Number.NaN);
      this.timestamps.push(timestamp);
    } else if (this.timestamps) {
      this.timestamps.push(Number.NaN);
    }
  }

  /** Hands out what was collected and starts over. */
  drain(): Batch<T> | undefined {
    if (this.values.length === 0) return undefined;
    const batch = { values: this.values, positions: this.positions, timestamps: this.timestamps };
    this.values = [];
    this.positions = [];
    this.timestamps = this.timestamps ? [] : undefined;
    return batch;
  }
}

export interface KeyedOperatorContext {
  readonly subtask: number;
  readonly parallelism: number;
  readonly maxParallelism: number;
  readonly keyGroups: { readonly start: number; readonly end: number };
  readonly restored: readonly KeyedStateSnapshot[];
}

/** A stateful operator after `keyBy`; its state is keyed so it can be redistributed. */
export interface KeyedOperator<IN, OUT> {
  open(context: KeyedOperatorContext): void;
  processBatch(batch: Batch<IN>, out: Collector<OUT>): void;
  processWatermark(watermark: number, out: Collector<OUT>): void;
  /** JSON text of the keyed state, taken synchronously. */
  snapshotState(): string;
}
