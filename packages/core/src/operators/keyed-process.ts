import { RecordProcessingError } from "../errors.ts";
import type { Batch, RecordPosition } from "../records.ts";
import type { Key } from "./key-groups.ts";
import { KeyedStateStore } from "./keyed-state.ts";
import type { Collector, KeyedOperator, KeyedOperatorContext } from "./operator.ts";

/** The value state of the current key, as Flink's ValueState. @public */
export interface ValueState<S> {
  value(): S | undefined;
  update(value: S): void;
  clear(): void;
}

/**
 * What a {@link KeyedProcessFunction} gets with each record: its key, event time and source
 * position, the key's state, and `emit`.
 * @public
 */
export interface KeyedProcessContext<K extends Key, OUT, S> {
  readonly key: K;
  /** The record's event time, if a watermark strategy assigned one. */
  readonly timestamp: number | undefined;
  readonly position: RecordPosition;
  readonly state: ValueState<S>;
  emit(value: OUT): void;
}

/**
 * The function of a keyed `process` stage. Its state is checkpointed (it must be
 * JSON-serializable) and restored identically after a crash or a change of parallelism.
 * @public
 */
export interface KeyedProcessFunction<K extends Key, IN, OUT, S> {
  processElement(value: IN, context: KeyedProcessContext<K, OUT, S>): void;
}

export class KeyedProcessOperator<K extends Key, IN, OUT, S> implements KeyedOperator<IN, OUT> {
  private store: KeyedStateStore<S> | undefined;
  private readonly keyOf: (value: IN) => K;
  private readonly fn: KeyedProcessFunction<K, IN, OUT, S>;

  constructor(keyOf: (value: IN) => K, fn: KeyedProcessFunction<K, IN, OUT, S>) {
    this.keyOf = keyOf;
    this.fn = fn;
  }

  open(context: KeyedOperatorContext): void {
    this.store = new KeyedStateStore<S>(context.maxParallelism);
    this.store.restore(context.restored, context.keyGroups);
  }

  processBatch(batch: Batch<IN>, out: Collector<OUT>): void {
    const store = this.store as KeyedStateStore<S>;
    // One mutable context object a batch, not one a record.
    const ctx = {
      key: undefined as unknown as K,
      timestamp: undefined as number | undefined,
      position: undefined as unknown as RecordPosition,
      state: {
        value: () => store.get(ctx.key),
        update: (value: S) => store.set(ctx.key, value),
        clear: () => store.delete(ctx.key),
      },
      emit: (value: OUT) => out.emit(value, ctx.position, ctx.timestamp),
    };
    const { values, positions, timestamps } = batch;
    for (let i = 0; i < values.length; i++) {
      const value = values[i] as IN;
      ctx.key = this.keyOf(value);
      ctx.position = positions[i] as RecordPosition;
      ctx.timestamp = timestamps?.[i];
      try {
        this.fn.processElement(value, ctx);
      } catch (error) {
        throw new RecordProcessingError("process", ctx.position, error);
      }
    }
  }

  processWatermark(): void {}

  snapshotState(): string {
    return (this.store as KeyedStateStore<S>).snapshot();
  }
}
