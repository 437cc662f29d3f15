import type { Batch, RecordPosition } from "../records.ts";
import type { Source, SourceReader, SourceReaderContext } from "./source.ts";

/** A bounded source over an in-memory array, one split; for tests and examples. @public */
export class ArraySource<T> implements Source<T> {
  readonly name: string;
  readonly bounded = true;
  readonly values: readonly T[];

  constructor(values: readonly T[], options: { name?: string } = {}) {
    this.values = values;
    this.name = options.name ?? "array";
  }

  createReader(context: SourceReaderContext): SourceReader<T> {
    const owns = context.subtask === 0;
    const restored = context.restoredPositions?.get("0");
    let next = typeof restored === "number" ? restored : 0;
    const name = this.name;
    const values = this.values;
    return {
      poll(maxRecords: number): Batch<T> | null {
        if (!owns || next >= values.length) return null;
        const end = Math.min(values.length, next + maxRecords);
        const positions: RecordPosition[] = [];
        for (let i = next; i < end; i++) positions.push({ source: name, split: "0", offset: i });
        const batch = { values: values.slice(next, end), positions, timestamps: undefined };
        next = end;
        return batch;
      },
      snapshotPositions: () => (owns ? { "0": next } : {}),
    };
  }
}
