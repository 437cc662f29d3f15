/**
 * Rows encoded and waiting to be written, with each row's source position, so a row the
 * server refuses can be named. Appends become COPY text, one piece per batch; upserts become
 * one `text[]` per column, one row per key (the last record of a key wins: ON CONFLICT cannot
 * touch a row twice in one statement).
 */
import { type Batch, type RecordPosition, RecordWriteError } from "@exactly/core";
import { parseCopyLine } from "./column-types.ts";
import { type DeadLetter, encodingDeadLetter } from "./dead-letters.ts";
import type { CompiledMapping } from "./table-mapping.ts";

/**
 * Rows in COPY's text format: whole lines, each ending in `\n`, and their positions. A batch's
 * rows are joined into one piece as they are encoded, so the line of each record is garbage
 * before the next batch comes, rather than an object that lives until the write-out (the
 * collector's copying of those was the append path's largest cost).
 */
export interface CopyPiece {
  readonly text: string;
  readonly rows: number;
  /** The position of each row of the piece. */
  readonly positions: readonly (RecordPosition | undefined)[];
}

export type PendingRows = (
  | { readonly kind: "copy"; readonly pieces: readonly CopyPiece[]; readonly rows: number }
  | {
      readonly kind: "upsert";
      readonly columns: (string | null)[][];
      readonly positions: (RecordPosition | undefined)[];
    }
) & {
  /** Records that could not be encoded, for the dead-letter table. */
  readonly setAside: DeadLetter[];
};

/** The rows to write. */
export function rowCount(rows: PendingRows): number {
  return rows.kind === "copy" ? rows.rows : rows.positions.length;
}

/** The source position of row `row` (from 0). */
export function positionAt(rows: PendingRows, row: number): RecordPosition | undefined {
  if (rows.kind === "upsert") return rows.positions[row];
  let first = 0;
  for (const piece of rows.pieces) {
    if (row < first + piece.rows) return piece.positions[row - first];
    first += piece.rows;
  }
  return undefined;
}

/** Rows `from` to `to` of appended rows as COPY lines, without their `\n` (bisecting a refused write). */
export function copyLines(rows: Extract<PendingRows, { kind: "copy" }>, from: number, to: number): string[] {
  const lines: string[] = [];
  let first = 0;
  for (const piece of rows.pieces) {
    if (first + piece.rows > from && first < to) {
      const pieceLines = piece.text.split("\n");
      for (let i = Math.max(from, first); i < Math.min(to, first + piece.rows); i++)
        lines.push(pieceLines[i - first] as string);
    }
    first += piece.rows;
  }
  return lines;
}

export class RowBuffer<T> {
  private readonly mapping: CompiledMapping<T>;
  private pieces: CopyPiece[] = [];
  private copyRows = 0;
  /** Lines added one by one (a write-ahead log's), made into a piece before the next batch or take. */
  private loose: { lines: string[]; positions: (RecordPosition | undefined)[] } = { lines: [], positions: [] };
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
    return this.copyRows + this.loose.lines.length + this.positions.length + this.setAside.length;
  }

  /** Encodes a batch; a record that cannot be encoded fails with a RecordWriteError naming its position. */
  add(batch: Batch<T>): void {
    if (this.mapping.upserts) this.addUpserts(batch);
    else this.addAppends(batch);
  }

  private addAppends(batch: Batch<T>): void {
    this.sealLoose();
    const { values, positions } = batch;
    const lines: string[] = new Array(values.length);
    let kept = 0;
    // Positions of the rows kept, made only once a record is set aside: batches are not
    // changed once emitted, so the batch's own array serves the usual case.
    let keptPositions: RecordPosition[] | undefined;
    for (let i = 0; i < values.length; i++) {
      try {
        lines[kept] = this.mapping.encodeLine(values[i] as T);
        keptPositions?.push(positions[i] as RecordPosition);
        kept++;
      } catch (error) {
        if (!this.settingAside) throw new RecordWriteError(positions[i], error);
        this.setAside.push(encodingDeadLetter(positions[i], values[i], error));
        keptPositions ??= positions.slice(0, i);
      }
    }
    if (kept === 0) return;
    lines.length = kept;
    lines.push("");
    this.pieces.push({ text: lines.join("\n"), rows: kept, positions: keptPositions ?? positions });
    this.copyRows += kept;
  }

  private addUpserts(batch: Batch<T>): void {
    const { values, positions } = batch;
    for (let i = 0; i < values.length; i++) {
      try {
        this.addCells(this.mapping.encode(values[i] as T), positions[i]);
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
    this.loose.lines.push(line);
    this.loose.positions.push(position);
  }

  private sealLoose(): void {
    const { lines, positions } = this.loose;
    if (lines.length === 0) return;
    lines.push("");
    this.pieces.push({ text: lines.join("\n"), rows: positions.length, positions });
    this.copyRows += positions.length;
    this.loose = { lines: [], positions: [] };
  }

  /** Adds a dead letter already made (a write-ahead log's record that could not be encoded). */
  addDeadLetter(letter: DeadLetter): void {
    this.setAside.push(letter);
  }

  /** What is buffered, and an empty buffer from now on. */
  take(): PendingRows {
    const setAside = this.setAside;
    this.setAside = [];
    if (!this.mapping.upserts) {
      this.sealLoose();
      const pending: PendingRows = { kind: "copy", pieces: this.pieces, rows: this.copyRows, setAside };
      this.pieces = [];
      this.copyRows = 0;
      return pending;
    }
    const pending: PendingRows = { kind: "upsert", columns: this.columns, positions: this.positions, setAside };
    this.columns = this.mapping.columns.map(() => []);
    this.positions = [];
    this.keys = new Map();
    return pending;
  }
}
