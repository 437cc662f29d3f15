import { ConfigurationError, requirePositiveInteger } from "../errors.ts";
import type { Batch, RecordPosition } from "../records.ts";
import { sleep } from "../util/sleep.ts";
import { ownsSplit, type Source, type SourceReader, type SourceReaderContext } from "./source.ts";

/** Options of {@link GeneratorSource}. @public */
export interface GeneratorSourceOptions<T> {
  readonly name?: string;
  /** Records in all; undefined for an unbounded source. */
  readonly count?: number;
  /** Lanes the indexes are dealt over (index mod splits); the most useful parallelism. Default 4. */
  readonly splits?: number;
  /** Records per second over all readers, more than 0; undefined for as fast as possible. */
  readonly ratePerSecond?: number;
  /** Turns an index into a record; must be deterministic, since a replay calls it again. */
  readonly generate: (index: number) => T;
  /**
   * Which subtask reads which lane. Default {@link ownsSplit} (lane i to subtask i mod
   * parallelism); {@link splitPerKey} when lane i holds the records of key i.
   */
  readonly splitOwner?: (split: number, context: SourceReaderContext) => boolean;
}

/** A deterministic source of `generate(0) … generate(count − 1)`. @public */
export class GeneratorSource<T> implements Source<T> {
  readonly name: string;
  readonly bounded: boolean;
  readonly options: GeneratorSourceOptions<T>;

  constructor(options: GeneratorSourceOptions<T>) {
    this.options = options;
    this.name = options.name ?? "generator";
    this.bounded = options.count !== undefined;
    const splits = options.splits ?? 4;
    requirePositiveInteger("splits", splits);
    if (options.count !== undefined && (!Number.isInteger(options.count) || options.count < 0)) {
      throw new ConfigurationError("count", "must be a non-negative integer");
    }
    // A rate of 0 or less would never allow a record: the reader would wait for ever.
    const rate = options.ratePerSecond;
    if (rate !== undefined && !(Number.isFinite(rate) && rate > 0)) {
      throw new ConfigurationError("ratePerSecond", `must be more than 0 (or left out for no limit), got ${rate}`);
    }
  }

  createReader(context: SourceReaderContext): SourceReader<T> {
    return new GeneratorReader(this, context);
  }
}

class GeneratorReader<T> implements SourceReader<T> {
  /** Per owned split: the next index it emits. */
  private readonly lanes: Array<{ split: number; next: number; id: string }> = [];
  private readonly stride: number;
  private readonly count: number;
  private readonly generate: (index: number) => T;
  private readonly name: string;
  private readonly perReaderRate: number | undefined;
  private emitted = 0;
  private startedAt = 0;
  private turn = 0;

  constructor(source: GeneratorSource<T>, context: SourceReaderContext) {
    const splits = source.options.splits ?? 4;
    this.stride = splits;
    this.count = source.options.count ?? Number.POSITIVE_INFINITY;
    this.generate = source.options.generate;
    this.name = source.name;
    const rate = source.options.ratePerSecond;
    this.perReaderRate = rate === undefined ? undefined : rate / context.parallelism;
    for (let split = 0; split < splits; split++) {
      if (!(source.options.splitOwner ?? ownsSplit)(split, context)) continue;
      const id = String(split);
      const restored = context.restoredPositions?.get(id);
      this.lanes.push({ split, id, next: typeof restored === "number" ? restored : split });
    }
  }

  async poll(maxRecords: number): Promise<Batch<T> | null> {
    const live = this.lanes.filter((lane) => lane.next < this.count);
    if (live.length === 0) return null;
    let budget = maxRecords;
    if (this.perReaderRate !== undefined) {
      if (this.startedAt === 0) this.startedAt = Date.now();
      const allowed = Math.floor(((Date.now() - this.startedAt) / 1000) * this.perReaderRate) - this.emitted;
      if (allowed <= 0) {
        await sleep(Math.min(50, Math.ceil(1000 / this.perReaderRate)));
        return { values: [], positions: [], timestamps: undefined };
      }
      budget = Math.min(budget, allowed);
    }
    // Take a run from one lane at a time, rotating, so each lane's positions stay contiguous.
    const lane = live[this.turn++ % live.length] as (typeof live)[number];
    // The batch's size is known before it is made, so its arrays are made at that size.
    const size = Math.min(budget, Math.ceil((this.count - lane.next) / this.stride));
    const values = new Array<T>(size);
    const positions = new Array<RecordPosition>(size);
    for (let i = 0; i < size; i++) {
      values[i] = this.generate(lane.next);
      positions[i] = { source: this.name, split: lane.id, offset: lane.next };
      lane.next += this.stride;
    }
    this.emitted += size;
    return { values, positions, timestamps: undefined };
  }

  activeSplits(): readonly string[] {
    return this.lanes.filter((lane) => lane.next < this.count).map((lane) => lane.id);
  }

  snapshotPositions(): Record<string, unknown> {
    const positions: Record<string, unknown> = {};
    for (const lane of this.lanes) positions[lane.id] = lane.next;
    return positions;
  }
}
