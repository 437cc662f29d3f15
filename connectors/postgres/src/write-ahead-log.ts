/**
 * The write-ahead sink's log in checkpoint storage, framed by batch so that at commit an
 * appended checkpoint's rows go to COPY as the bytes they were logged as, never taken apart
 * one by one (that per-row work, done a second time at commit, is what kept the write-ahead
 * sink at half the speed of a plain COPY):
 *
 *   `B<rows>\t<bytes>\t<positions>`  a batch's header: how many rows follow, the bytes of
 *                                    their lines (each with its `\n`), and their source
 *                                    positions as runs (JSON, decoded only when needed);
 *   `<COPY line>` × rows             the rows, in COPY's text format, already encoded, so a
 *                                    record that cannot be written failed when it arrived;
 *   `D<json>`                        a record set aside for the dead-letter table, alone.
 */
import { Buffer } from "node:buffer";
import type { RecordPosition } from "@exactly/core";
import type { DeadLetter } from "./dead-letters.ts";

/** One entry of the log: a batch's rows, or a dead letter. */
export type LogEntry =
  | {
      readonly kind: "rows";
      readonly rows: number;
      /** The rows' COPY lines, each ending in `\n`, as bytes. */
      readonly body: Uint8Array;
      /** Their positions, still encoded: {@link decodePositions}. */
      readonly positions: string;
    }
  | { readonly kind: "dead-letter"; readonly letter: DeadLetter };

/**
 * A run of positions of one source and split, in strides: rows `index + k × indexStep` hold
 * offsets `offset + k × offsetStep`, for k below `count`. A batch from one split with
 * consecutive offsets is one run; a generator's or a rebalanced batch, whose splits take
 * turns record by record, is one run per split; anything else costs a run per record.
 */
type Run = [
  source: string,
  split: string,
  index: number,
  indexStep: number,
  offset: number | string,
  offsetStep: number,
  count: number,
];

/** Positions as runs (JSON): a few bytes a batch, whatever its size, for the usual sources. */
export function encodePositions(positions: readonly RecordPosition[]): string {
  const runs: Run[] = [];
  /** The latest run of each source and split seen, most recent last: a batch has few of them. */
  const open: Run[] = [];
  for (let i = 0; i < positions.length; i++) {
    const p = positions[i] as RecordPosition;
    let at = open.length - 1;
    while (at >= 0 && ((open[at] as Run)[0] !== p.source || (open[at] as Run)[1] !== p.split)) at--;
    const run = at >= 0 ? (open[at] as Run) : undefined;
    if (run && typeof p.offset === "number" && typeof run[4] === "number") {
      const lastIndex = run[2] + (run[6] - 1) * run[3];
      const lastOffset = run[4] + (run[6] - 1) * run[5];
      if (run[6] === 1) {
        run[3] = i - lastIndex;
        run[5] = p.offset - lastOffset;
        run[6] = 2;
        continue;
      }
      if (i - lastIndex === run[3] && p.offset - lastOffset === run[5]) {
        run[6]++;
        continue;
      }
    }
    const next: Run = [p.source, p.split, i, 1, p.offset, 1, 1];
    runs.push(next);
    if (run) open[at] = next;
    else open.push(next);
  }
  return JSON.stringify(runs);
}

export function decodePositions(text: string): RecordPosition[] {
  const positions: RecordPosition[] = [];
  for (const [source, split, index, indexStep, offset, offsetStep, count] of JSON.parse(text) as Run[]) {
    if (typeof offset !== "number") positions[index] = { source, split, offset };
    else
      for (let k = 0; k < count; k++)
        positions[index + k * indexStep] = { source, split, offset: offset + k * offsetStep };
  }
  return positions;
}

/**
 * A batch's rows as log text: the header, then the rows' COPY lines joined by `\n` (the log
 * store ends the text with the last one's `\n`).
 */
export function logRows(lines: readonly string[], positions: readonly RecordPosition[]): string[] {
  const body = lines.join("\n");
  const bytes = Buffer.byteLength(body) + 1;
  return [`B${lines.length}\t${bytes}\t${encodePositions(positions)}`, body];
}

export function logDeadLetter(letter: DeadLetter): string {
  return `D${JSON.stringify(letter)}`;
}

function notALogLine(text: string): Error {
  return new Error(`not a line of the Postgres write-ahead log: ${text.slice(0, 40)}`);
}

const NEWLINE = 0x0a;

/**
 * The entries of a log read as bytes (`LoggedRecords.bytes()`), in order. Chunks may end
 * anywhere; a batch's rows are handed on as one piece of bytes, never split into lines.
 */
export async function* readLogEntries(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<LogEntry> {
  let held: Buffer = Buffer.alloc(0);
  let at = 0;
  /** The header of the batch whose rows are still being read. */
  let open: { rows: number; bytes: number; positions: string } | undefined;
  for await (const chunk of chunks) {
    held =
      at < held.length
        ? Buffer.concat([held.subarray(at), chunk])
        : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    at = 0;
    for (;;) {
      if (open) {
        if (held.length - at < open.bytes) break;
        yield { kind: "rows", rows: open.rows, body: held.subarray(at, at + open.bytes), positions: open.positions };
        at += open.bytes;
        open = undefined;
        continue;
      }
      const end = held.indexOf(NEWLINE, at);
      if (end < 0) break;
      const line = held.toString("utf8", at, end);
      at = end + 1;
      if (line.startsWith("D")) {
        yield { kind: "dead-letter", letter: JSON.parse(line.slice(1)) as DeadLetter };
        continue;
      }
      const t1 = line.indexOf("\t");
      const t2 = line.indexOf("\t", t1 + 1);
      const rows = Number(line.slice(1, t1));
      const bytes = Number(line.slice(t1 + 1, t2));
      if (!line.startsWith("B") || t2 < 0 || !Number.isInteger(rows) || !Number.isInteger(bytes))
        throw notALogLine(line);
      open = { rows, bytes, positions: line.slice(t2 + 1) };
    }
  }
  if (open || at < held.length)
    throw new Error("the Postgres write-ahead log ends inside an entry: it was cut short after it was synced");
}

/** A batch's rows as COPY lines (without their `\n`). */
export function rowLines(entry: Extract<LogEntry, { kind: "rows" }>): string[] {
  const lines = Buffer.from(entry.body.buffer, entry.body.byteOffset, entry.body.byteLength)
    .toString("utf8")
    .split("\n");
  lines.pop();
  return lines;
}

/** The source position of the log's `line`-th row (from 0, dead letters not counted), read from the log again. */
export async function positionOfRow(
  chunks: AsyncIterable<Uint8Array>,
  line: number,
): Promise<RecordPosition | undefined> {
  let first = 0;
  for await (const entry of readLogEntries(chunks)) {
    if (entry.kind !== "rows") continue;
    if (line < first + entry.rows) return decodePositions(entry.positions)[line - first];
    first += entry.rows;
  }
  return undefined;
}
