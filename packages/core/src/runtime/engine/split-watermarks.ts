import type { Batch } from "../../records.ts";
import type { WatermarkStrategy } from "../api/job-graph.ts";

interface SplitTime {
  /** The highest event time seen on the split. */
  maxTimestamp: number;
  /** Wall-clock time of the split's last record, for idleness. */
  lastRecordAt: number;
}

/** Stands for every split of a reader that does not name its splits. */
const WHOLE_READER = "";

/**
 * Event time of one source subtask, kept per split: each split's watermark is its highest
 * timestamp minus the allowed out-of-orderness, and the subtask emits the minimum over the
 * splits it still reads. One watermark for the whole reader would let a fast split (a Kafka
 * partition with a backlog read first) push event time past the records a slower split has
 * not delivered yet, and those records would be dropped as late.
 */
export class SplitWatermarks {
  private readonly strategy: WatermarkStrategy<unknown>;
  private readonly activeSplits: (() => readonly string[]) | undefined;
  private readonly now: () => number;
  private readonly splits = new Map<string, SplitTime>();
  private readonly startedAt: number;
  private emitted = Number.NEGATIVE_INFINITY;

  constructor(
    strategy: WatermarkStrategy<unknown>,
    activeSplits: (() => readonly string[]) | undefined,
    now: () => number = Date.now,
  ) {
    this.strategy = strategy;
    this.activeSplits = activeSplits;
    this.now = now;
    this.startedAt = now();
  }

  /** Gives the batch its timestamps and advances the event time of the splits it came from. */
  assign(batch: Batch<unknown>): Batch<unknown> {
    const { timestampOf } = this.strategy;
    const now = this.now();
    const timestamps = new Array<number>(batch.values.length);
    // Batches come split by split, so the split's entry is looked up once per run of records.
    const perSplit = this.activeSplits !== undefined;
    let currentSplit: string | undefined;
    let time: SplitTime | undefined;
    for (let i = 0; i < batch.values.length; i++) {
      const ts = timestampOf(batch.values[i]);
      timestamps[i] = ts;
      const split = perSplit ? (batch.positions[i]?.split ?? WHOLE_READER) : WHOLE_READER;
      if (split !== currentSplit || time === undefined) {
        currentSplit = split;
        time = this.splits.get(split);
        if (time === undefined) {
          time = { maxTimestamp: Number.NEGATIVE_INFINITY, lastRecordAt: now };
          this.splits.set(split, time);
        }
        time.lastRecordAt = now;
      }
      if (ts > time.maxTimestamp) time.maxTimestamp = ts;
    }
    return { values: batch.values, positions: batch.positions, timestamps };
  }

  /**
   * The watermark to emit now, or undefined when it has not advanced. Splits idle for longer
   * than the strategy's `idleTimeoutMs` are left out. When every split is idle, the splits that
   * had records decide: otherwise whether event time moves would depend on which split turned
   * idle first, a race between the last records and the idle timer.
   */
  advance(): number | undefined {
    const ids = this.activeSplits ? this.activeSplits() : [WHOLE_READER];
    const idleAfter = this.strategy.idleTimeoutMs;
    const now = this.now();
    let active = Number.POSITIVE_INFINITY;
    let activeCount = 0;
    let idle = Number.POSITIVE_INFINITY;
    for (const id of ids) {
      const time = this.splits.get(id);
      const split = (time?.maxTimestamp ?? Number.NEGATIVE_INFINITY) - this.strategy.maxOutOfOrdernessMs - 1;
      if (idleAfter !== undefined && now - (time?.lastRecordAt ?? this.startedAt) >= idleAfter) {
        if (time !== undefined && split < idle) idle = split;
        continue;
      }
      activeCount++;
      if (split < active) active = split;
    }
    const watermark = activeCount > 0 ? active : idle;
    if (watermark === Number.POSITIVE_INFINITY || watermark <= this.emitted) return undefined;
    this.emitted = watermark;
    return watermark;
  }
}
