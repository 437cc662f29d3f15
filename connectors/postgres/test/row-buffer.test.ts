// Appended rows are buffered as one piece of COPY text per batch: what is taken must be every
// row kept, in order, each with its own position, also when a record of a batch is set aside.
import type { Batch, RecordPosition } from "@exactly/core";
import { describe, expect, it } from "vitest";
import { copyLines, positionAt, RowBuffer, rowCount } from "../src/row-buffer.ts";
import { CompiledMapping } from "../src/table-mapping.ts";

interface Row {
  id: unknown;
  note: string | null;
}

const mapping = new CompiledMapping<Row>({
  table: "t",
  columns: [
    { name: "id", type: "bigint" },
    { name: "note", type: "text" },
  ],
  write: "append",
});

const at = (offset: number): RecordPosition => ({ source: "gen", split: "0", offset });

function batch(from: number, ids: unknown[]): Batch<Row> {
  return {
    values: ids.map((id, i) => ({ id, note: i % 2 === 0 ? `n\t${from + i}` : null })),
    positions: ids.map((_, i) => at(from + i)),
    timestamps: undefined,
  };
}

describe("RowBuffer (appends)", () => {
  it("takes every batch's rows as whole COPY lines, in order, with their positions; lines added one by one too", () => {
    const buffer = new RowBuffer(mapping);
    buffer.add(batch(0, [0, 1, 2]));
    buffer.addLine("90\t\\N", at(90));
    buffer.add(batch(3, [3, 4]));
    expect(buffer.size).toBe(6);
    const rows = buffer.take();
    expect(buffer.size).toBe(0);
    if (rows.kind !== "copy") throw new Error("appends are COPY text");
    expect(rowCount(rows)).toBe(6);
    expect(rows.pieces.map((p) => p.text).join("")).toBe("0\tn\\t0\n1\t\\N\n2\tn\\t2\n90\t\\N\n3\tn\\t3\n4\t\\N\n");
    expect(Array.from({ length: 6 }, (_, i) => positionAt(rows, i)?.offset)).toEqual([0, 1, 2, 90, 3, 4]);
    expect(copyLines(rows, 2, 5)).toEqual(["2\tn\\t2", "90\t\\N", "3\tn\\t3"]);
  });

  it("a record that cannot be encoded fails naming its position, or, set aside, leaves the rows after it their own positions", () => {
    expect(() => new RowBuffer(mapping).add(batch(10, [10, "x", 12]))).toThrow(
      expect.objectContaining({ position: at(11) }),
    );
    const buffer = new RowBuffer(mapping, true);
    buffer.add(batch(10, [10, "x", 12, "y", 14]));
    const rows = buffer.take();
    if (rows.kind !== "copy") throw new Error("appends are COPY text");
    expect(rows.setAside.map((letter) => letter.position)).toEqual([at(11), at(13)]);
    expect(copyLines(rows, 0, rowCount(rows))).toEqual(["10\tn\\t10", "12\tn\\t12", "14\tn\\t14"]);
    expect([0, 1, 2].map((i) => positionAt(rows, i))).toEqual([at(10), at(12), at(14)]);
  });
});
