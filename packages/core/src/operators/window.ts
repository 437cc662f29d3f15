import { ConfigurationError } from "../errors.ts";
import type { Batch } from "../records.ts";
import type { Key } from "./key-groups.ts";
import { KeyedStateStore } from "./keyed-state.ts";
import type { Collector, KeyedOperator, KeyedOperatorContext } from "./operator.ts";

/** Tumbling event-time windows `[start, start + size)`, aligned to the epoch plus `offset`. @public */
export class TumblingEventTimeWindows {
  readonly sizeMs: number;
  readonly offsetMs: number;

  private constructor(sizeMs: number, offsetMs: number) {
    if (!(sizeMs > 0)) throw new ConfigurationError("window size", "must be positive");
    this.sizeMs = sizeMs;
    this.offsetMs = offsetMs;
  }

  static of(sizeMs: number, offsetMs = 0): TumblingEventTimeWindows {
    return new TumblingEventTimeWindows(sizeMs, offsetMs);
  }

  startOf(timestamp: number): number {
    const shifted = timestamp - this.offsetMs;
    return shifted - (((shifted % this.sizeMs) + this.sizeMs) % this.sizeMs) + this.offsetMs;
  }
}

/**
 * Folds the records of one key and window into one result (Flink's `AggregateFunction`), through an
 * accumulator.
 * @public
 */
export interface AggregateFunction<IN, ACC, OUT> {
  createAccumulator(): ACC;
  add(value: IN, accumulator: ACC): ACC;
  getResult(accumulator: ACC): OUT;
}

/** What a window stage emits: one result a key and window. @public */
export interface WindowResult<K extends Key, R> {
  readonly key: K;
  readonly start: number;
  readonly end: number;
  readonly value: R;
}

/**
 * Keyed tumbling windows fired by watermarks. Window contents are keyed state (key →
 * window end → accumulator), so a restore rebuilds the same open windows. A record
 * for a window the watermark already passed is late and dropped, as in Flink.
 */
export class WindowOperator<K extends Key, IN, ACC, OUT> implements KeyedOperator<IN, WindowResult<K, OUT>> {
  private store: KeyedStateStore<Record<string, ACC>> | undefined;
  /** window end → keys with an open window ending there. */
  private readonly timers = new Map<number, Set<K>>();
  private watermark = Number.NEGATIVE_INFINITY;
  private readonly keyOf: (value: IN) => K;
  private readonly windows: TumblingEventTimeWindows;
  private readonly aggregate: AggregateFunction<IN, ACC, OUT>;
  /** Records dropped because their window had fired. */
  lateRecords = 0;

  constructor(keyOf: (value: IN) => K, windows: TumblingEventTimeWindows, aggregate: AggregateFunction<IN, ACC, OUT>) {
    this.keyOf = keyOf;
    this.windows = windows;
    this.aggregate = aggregate;
  }

  open(context: KeyedOperatorContext): void {
    this.store = new KeyedStateStore(context.maxParallelism);
    this.store.restore(context.restored, context.keyGroups);
    for (const [key, windows] of this.store.entries()) {
      for (const end of Object.keys(windows)) this.timer(Number(end)).add(key as K);
    }
  }

  private timer(end: number): Set<K> {
    let keys = this.timers.get(end);
    if (!keys) {
      keys = new Set();
      this.timers.set(end, keys);
    }
    return keys;
  }

  processBatch(batch: Batch<IN>): void {
    const store = this.store as KeyedStateStore<Record<string, ACC>>;
    const { values, timestamps, positions } = batch;
    if (!timestamps) {
      throw new ConfigurationError(
        "watermarks",
        `event-time windows need timestamps; none assigned before ${positions[0]?.source}`,
      );
    }
    for (let i = 0; i < values.length; i++) {
      const value = values[i] as IN;
      const ts = timestamps[i] as number;
      const start = this.windows.startOf(ts);
      const end = start + this.windows.sizeMs;
      if (end - 1 <= this.watermark) {
        this.lateRecords++;
        continue;
      }
      const key = this.keyOf(value);
      let windows = store.get(key);
      if (!windows) {
        windows = {};
        store.set(key, windows);
      }
      const slot = String(end);
      const acc = windows[slot] ?? this.aggregate.createAccumulator();
      windows[slot] = this.aggregate.add(value, acc);
      this.timer(end).add(key);
    }
  }

  processWatermark(watermark: number, out: Collector<WindowResult<K, OUT>>): void {
    if (watermark <= this.watermark) return;
    this.watermark = watermark;
    const store = this.store as KeyedStateStore<Record<string, ACC>>;
    const due = [...this.timers.keys()].filter((end) => end - 1 <= watermark).sort((a, b) => a - b);
    for (const end of due) {
      const keys = this.timers.get(end) as Set<K>;
      this.timers.delete(end);
      const slot = String(end);
      for (const key of keys) {
        const windows = store.get(key);
        const acc = windows?.[slot];
        if (!windows || acc === undefined) continue;
        delete windows[slot];
        if (Object.keys(windows).length === 0) store.delete(key);
        const start = end - this.windows.sizeMs;
        out.emit(
          { key, start, end, value: this.aggregate.getResult(acc) },
          { source: "window", split: String(key), offset: end },
          end - 1,
        );
      }
    }
  }

  snapshotState(): string {
    return (this.store as KeyedStateStore<Record<string, ACC>>).snapshot();
  }
}
