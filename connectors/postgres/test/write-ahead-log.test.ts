// The write-ahead sink's log read back to what was logged: batches whose rows come back as the
// same COPY bytes (escaped fields, NULLs, multi-byte text), positions whose parts hold tabs and
// backslashes, numeric and string offsets, dead letters, and chunks cut anywhere.
import { describe, expect, it } from "vitest";
import { copyLine, parseCopyLine } from "../src/column-types.ts";
import {
  decodePositions,
  encodePositions,
  type LogEntry,
  logDeadLetter,
  logRows,
  positionOfRow,
  readLogEntries,
  rowLines,
} from "../src/write-ahead-log.ts";

/** The log text a log store writes for these appends: lines joined by "\n", each append ending in one. */
function logText(appends: readonly (readonly string[])[]): string {
  return appends.map((lines) => `${lines.join("\n")}\n`).join("");
}

/** The log's bytes in chunks of `size` bytes, so entries and multi-byte characters are cut anywhere. */
async function* chunked(text: string, size: number): AsyncGenerator<Uint8Array> {
  const bytes = Buffer.from(text);
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

async function entries(text: string, size: number): Promise<LogEntry[]> {
  const read: LogEntry[] = [];
  for await (const entry of readLogEntries(chunked(text, size))) read.push(entry);
  return read;
}

const cells = ["a\tb", null, "back\\slash\nnew line", "", "\\N", "zoë ✓"];
const letter = {
  position: { source: "s", split: "0", offset: 7 },
  sqlstate: "22P02",
  column: "id",
  error: "not an integer",
  recordJson: '{"id":"x"}',
};
const first = [copyLine(cells), copyLine(["1", "2", "3", "4", "5", "6"])];
const second = [copyLine(["x", null, "y", "z", "w", "ü"])];
const positionsOfFirst = [
  { source: "kafka", split: "orders-3", offset: 1234567 },
  { source: "so\turce", split: "sp\\lit\t", offset: "0000-12\t" },
];
const positionsOfSecond = [{ source: "kafka", split: "orders-3", offset: 1234568 }];
const text = logText([logRows(first, positionsOfFirst), [logDeadLetter(letter)], logRows(second, positionsOfSecond)]);

describe("the Postgres write-ahead log", () => {
  it("gives back each batch's rows as the bytes COPY takes, with positions and dead letters, however it is chunked", async () => {
    for (const size of [1, 3, 7, 64, 1 << 20]) {
      const read = await entries(text, size);
      expect(read.map((e) => e.kind)).toEqual(["rows", "dead-letter", "rows"]);
      const [a, d, b] = read as [
        LogEntry & { kind: "rows" },
        LogEntry & { kind: "dead-letter" },
        LogEntry & { kind: "rows" },
      ];
      expect(Buffer.from(a.body).toString()).toBe(`${first.join("\n")}\n`);
      expect(rowLines(a).map((line) => parseCopyLine(line))).toEqual([cells, ["1", "2", "3", "4", "5", "6"]]);
      expect(decodePositions(a.positions)).toEqual(positionsOfFirst);
      expect(d.letter).toEqual(letter);
      expect(rowLines(b)).toEqual(second);
      expect(decodePositions(b.positions)).toEqual(positionsOfSecond);
    }
  });

  it("keeps a batch of consecutive offsets as one run, and any other positions exactly", () => {
    const run = Array.from({ length: 1000 }, (_, i) => ({ source: "gen", split: "0", offset: 500 + i }));
    expect(encodePositions(run)).toBe('[["gen","0",0,1,500,1,1000]]');
    // A generator's batch: its splits take turns, one run per split.
    const turns = Array.from({ length: 1000 }, (_, i) => ({ source: "gen", split: String(i % 4), offset: 800 + i }));
    expect(JSON.parse(encodePositions(turns))).toHaveLength(4);
    expect(decodePositions(encodePositions(turns))).toEqual(turns);
    const mixed = [
      { source: "gen", split: "0", offset: 1 },
      { source: "gen", split: "0", offset: 3 },
      { source: "gen", split: "1", offset: 4 },
      { source: "gen", split: "1", offset: "x" },
      { source: "gen", split: "1", offset: 5 },
      { source: "other", split: "1", offset: 6 },
    ];
    expect(decodePositions(encodePositions(mixed))).toEqual(mixed);
    expect(decodePositions(encodePositions([...run, ...mixed]))).toEqual([...run, ...mixed]);
  });

  it("finds the position of the n-th row, dead letters not counted", async () => {
    expect(await positionOfRow(chunked(text, 5), 0)).toEqual(positionsOfFirst[0]);
    expect(await positionOfRow(chunked(text, 5), 1)).toEqual(positionsOfFirst[1]);
    expect(await positionOfRow(chunked(text, 5), 2)).toEqual(positionsOfSecond[0]);
    expect(await positionOfRow(chunked(text, 5), 3)).toBeUndefined();
  });

  it("refuses a log cut short inside an entry, and a line of another format", async () => {
    await expect(entries(text.slice(0, text.length - 3), 16)).rejects.toThrow(/ends inside an entry/);
    await expect(entries('R1\t2\t3\t"s"\t"0"\tn1\n', 16)).rejects.toThrow(/not a line of the Postgres write-ahead log/);
  });
});
