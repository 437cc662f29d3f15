/**
 * Rows encoded and waiting to be written, with each row's source position, so a row the
 * server refuses can be named. Appends become COPY text lines; upserts become one `text[]`
 * per column, one row per key (the last record of a key wins: ON CONFLICT cannot touch a
 * row twice in one statement).
 */
import { type Batch, type RecordPosition, RecordWriteError } from "@exactly/core";
import { parseCopyLine } from "./column-types.ts";
import { type DeadLetter, encodingDeadLetter } from "./dead-letters.ts";
import type { CompiledMapping } from "./table-mapping.ts";

export type PendingRows = (
  | { readonly kind: "copy"; readonly lines: string[] }
  | { readonly kind: "upsert"; readonly columns: (string | null)[][] }
) & {
  readonly positions: (RecordPosition | undefined)[];
  /** Records that could not be encoded, for the dead-letter table. */
  readonly setAside: DeadLetter[];
};

export class RowBuffer<T> {
  private readonly mapping: CompiledMapping<T>;
  private lines: string[] = [];
  private columns: (string | null)[][];
  private positions: (RecordPosition | undefined)[] = [];
  private keys = new Map<string, number>();
  private readonly settingAside: boolean;
  private setAside: DeadLetter[] = [];

  /** `settingAside`: a record that cannot be encoded becomes a dead letter rather than an error. */
  constructor(mapping: CompiledMapping<T>, settingAside = false) {
    this.mapping = mapping;
    this.settingAside = settingAside;
    this.columns = mapping.columns.map(() => []);
  }

  /** Rows buffered (for upserts, distinct keys), and dead letters. */
  get size(): number {
    return this.positions.length + this.setAside.length;
  }

  /** Encodes a batch; a record that cannot be encoded fails with a RecordWriteError naming its position. */
  add(batch: Batch<T>): void {
    const { values, positions } = batch;
    const upserts = this.mapping.upserts;
    for (let i = 0; i < values.length; i++) {
      try {
        // Appends go straight to their COPY line; upserts need the key's cells.
        if (upserts) this.addCells(this.mapping.encode(values[i] as T), positions[i]);
        else {
          this.lines.push(this.mapping.encodeLine(values[i] as T));
          this.positions.push(positions[i]);
        }
      } catch (error) {
        if (!this.settingAside) throw new RecordWriteError(positions[i], error);
        this.setAside.push(encodingDeadLetter(positions[i], values[i], error));
      }
    }
  }

  /** Adds an upserted row's cells: one row per key, the last one wins. */
  private addCells(cells: (string | null)[], position: RecordPosition | undefined): void {
    const key = this.mapping.keyOf(cells);
    const at = this.keys.get(key);
    const row = at ?? this.positions.length;
    if (at === undefined) {
      this.keys.set(key, row);
      this.positions.push(position);
    } else this.positions[row] = position;
    for (let c = 0; c < cells.length; c++) (this.columns[c] as (string | null)[])[row] = cells[c] as string | null;
  }

  /** Adds a row already encoded as a COPY line (a write-ahead log's rows). */
  addLine(line: string, position: RecordPosition | undefined): void {
    if (this.mapping.upserts) {
      this.addCells(parseCopyLine(line), position);
      return;
    }
    this.lines.push(line);
    this.positions.push(position);
  }

  /** Adds a dead letter already made (a write-ahead log's record that could not be encoded). */
  addDeadLetter(letter: DeadLetter): void {
    this.setAside.push(letter);
  }

  /** What is buffered, and an empty buffer from now on. */
  take(): PendingRows {
    const positions = this.positions;
    const setAside = this.setAside;
    this.positions = [];
    this.setAside = [];
    if (!this.mapping.upserts) {
      const lines = this.lines;
      this.lines = [];
      return { kind: "copy", lines, positions, setAside };
    }
    const columns = this.columns;
    this.columns = this.mapping.columns.map(() => []);
    this.keys = new Map();
    return { kind: "upsert", columns, positions, setAside };
  }
}
