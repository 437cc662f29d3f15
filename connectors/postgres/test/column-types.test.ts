// Integer columns take numbers, bigints and digit strings, and refuse what the server would,
// with its SQLSTATE: the bounds of each width, fractions, numbers past 2^53.
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { type ColumnType, copyLine, encodeValue } from "../src/column-types.ts";
import { RowRejectedError } from "../src/errors.ts";
import { CompiledMapping } from "../src/table-mapping.ts";

function refusal(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    return error instanceof RowRejectedError ? error.sqlstate : `not a RowRejectedError: ${String(error)}`;
  }
}

describe("integer column types", () => {
  const widths = [
    ["smallint", 2n ** 15n],
    ["integer", 2n ** 31n],
    ["bigint", 2n ** 63n],
  ] as const;

  it.each(widths)(
    "%s: the bounds are accepted as numbers, bigints and strings; one past them is 22003",
    (type, limit) => {
      for (const n of [-limit, limit - 1n, 0n, 42n]) {
        expect(encodeValue(type, n, "c")).toBe(n.toString());
        expect(encodeValue(type, n.toString(), "c")).toBe(n.toString());
        if (Number.isSafeInteger(Number(n))) expect(encodeValue(type, Number(n), "c")).toBe(n.toString());
      }
      for (const n of [-limit - 1n, limit]) {
        expect(refusal(() => encodeValue(type, n, "c"))).toBe("22003");
        if (Number.isSafeInteger(Number(n))) expect(refusal(() => encodeValue(type, Number(n), "c"))).toBe("22003");
      }
    },
  );

  it("a fraction is 22P02, a number past 2^53 is 22003, -0 is 0", () => {
    expect(refusal(() => encodeValue("integer", 1.5, "c"))).toBe("22P02");
    expect(refusal(() => encodeValue("bigint", 2 ** 53, "c"))).toBe("22003");
    expect(encodeValue("bigint", Number.MAX_SAFE_INTEGER, "c")).toBe(String(Number.MAX_SAFE_INTEGER));
    expect(encodeValue("integer", -0, "c")).toBe("0");
    expect(refusal(() => encodeValue("integer", "12a", "c"))).toBe("22P02");
  });
});

describe("a record's COPY line", () => {
  // encodeLine skips escaping for types whose text forms never need it; built the slow way
  // (cells, then each escaped) the line must come out the same for every type and value.
  const values: Record<string, unknown[]> = {
    text: ["plain", "tab\there", "new\nline", "back\\slash", "cr\r", "", null],
    integer: [0, -7, "  42 ", 12n, null],
    bigint: ["-9223372036854775808", 9007199254740991, null],
    "double precision": [1.5, Number.NaN, Number.NEGATIVE_INFINITY, " 2.5e3 ", "0x10", null],
    numeric: ["  3.14 ", 10n, "NaN", null],
    boolean: [true, false, null],
    uuid: ["0b7f6c1e-8d4a-4c1b-9a3e-2f5d6c7b8a90", null],
    timestamptz: [new Date(0), 86_400_000, "2026-12-01 10:00\t+01", null],
    jsonb: [{ a: "x\ty", b: [1, "\\"] }, "s\n", null],
    bytea: [Buffer.from([0, 1, 254]), null],
  };
  for (const [type, cases] of Object.entries(values)) {
    it(`${type}: encodeLine is copyLine(encode(record))`, () => {
      const mapping = new CompiledMapping<{ v: unknown; k: number }>({
        table: "t",
        columns: [
          { name: "k", type: "integer" },
          { name: "v", type: type as ColumnType },
        ],
        write: "append",
      });
      for (const v of cases) {
        const record = { k: 1, v };
        expect(mapping.encodeLine(record)).toBe(copyLine(mapping.encode(record)));
      }
    });
  }

  it("a NULL upsert key is refused as by encode, 23502 naming the column", () => {
    const mapping = new CompiledMapping<{ k: unknown }>({
      table: "t",
      columns: [{ name: "k", type: "integer" }],
      write: { upsertOn: ["k"] },
    });
    for (const encode of [() => mapping.encode({ k: null }), () => mapping.encodeLine({ k: undefined })]) {
      expect(refusal(encode)).toBe("23502");
    }
  });
});

describe("values that would be stored changed are refused", () => {
  it("text and varchar: a lone surrogate (sent as U+FFFD) is 22021; a surrogate pair is text", () => {
    for (const type of ["text", "varchar"] as const) {
      for (const s of ["\ud800", "a\udc00b", "x\ud83d"])
        expect(
          refusal(() => encodeValue(type, s, "c")),
          s,
        ).toBe("22021");
      expect(encodeValue(type, "😀 é", "c")).toBe("😀 é");
    }
  });

  it("json and jsonb: a lone surrogate in a value or key, NaN, Infinity, a Map, a Set, a function and undefined in an array are 22P02", () => {
    const changed: unknown[] = [
      { s: "\ud800" },
      { "\udc00": 1 },
      ["\ud83d"],
      { n: Number.NaN },
      [Number.POSITIVE_INFINITY],
      { m: new Map([["a", 1]]) },
      new Set([1]),
      { f: () => 1 },
      [undefined],
      [1, () => 2],
      { r: /x/ },
    ];
    for (const type of ["json", "jsonb"] as const)
      for (const value of changed)
        expect(
          refusal(() => encodeValue(type, value, "c")),
          inspect(value),
        ).toBe("22P02");
  });

  it("json and jsonb: a surrogate pair, a Date, a bigint and an undefined property (absent) are written", () => {
    expect(encodeValue("jsonb", { s: "😀", d: new Date(0), b: 12n, u: undefined }, "c")).toBe(
      '{"s":"😀","d":"1970-01-01T00:00:00.000Z","b":"12"}',
    );
  });

  it("json and jsonb: a string holding backslash-u0000 is text; a real NUL in a value or key is 22P05", () => {
    for (const type of ["json", "jsonb"] as const) {
      expect(encodeValue(type, { s: "\\u0000" }, "c")).toBe('{"s":"\\\\u0000"}');
      expect(encodeValue(type, ["\\\\u0000"], "c")).toBe('["\\\\\\\\u0000"]');
      for (const value of [{ s: "\u0000" }, { "\u0000": 1 }, ["\\\u0000"]])
        expect(
          refusal(() => encodeValue(type, value, "c")),
          inspect(value),
        ).toBe("22P05");
    }
  });

  it("double precision and real keep -0", () => {
    expect(encodeValue("double precision", -0, "c")).toBe("-0");
    expect(encodeValue("real", -0, "c")).toBe("-0");
  });
});
