// The write-ahead sink's log lines read back to what was logged: escaped fields, NULLs, a
// position whose parts hold tabs and backslashes, numeric and string offsets, dead letters.
import { describe, expect, it } from "vitest";
import { copyLine, parseCopyLine } from "../src/column-types.ts";
import { logDeadLetter, logRow, readLogged } from "../src/write-ahead-log.ts";

describe("write-ahead log lines", () => {
  it("a row reads back as its COPY line and its position", () => {
    const cells = ["a\tb", null, "back\\slash\nnew line", "", "\\N"];
    for (const position of [
      { source: "kafka", split: "orders-3", offset: 1234567 },
      { source: "so\turce", split: "sp\\lit\t", offset: "0000-12\t" },
    ]) {
      const read = readLogged(logRow(copyLine(cells), position));
      expect(read).toEqual({ line: copyLine(cells), position });
      expect("line" in read && parseCopyLine(read.line)).toEqual(cells);
    }
  });

  it("a dead letter reads back whole", () => {
    const letter = {
      position: { source: "s", split: "0", offset: 7 },
      sqlstate: "22P02",
      column: "id",
      error: "not an integer",
      recordJson: '{"id":"x"}',
    };
    expect(readLogged(logDeadLetter(letter))).toEqual({ deadLetter: letter });
  });

  it("a line of another format is refused, not misread", () => {
    expect(() => readLogged('[["1"],"s","0",1]')).toThrow(/not a line of the Postgres write-ahead log/);
  });
});
