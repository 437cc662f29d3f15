// What the Postgres sinks store for each JavaScript value, against the real server: every value
// in a table below, in a column of each kind, is stored as the table says (read back as the
// server's text form) or refused with the SQLSTATE it gives, as a record-write error naming the
// record's position. The guide (docs/connectors/postgres.md) shows this very table; a test here
// checks that it does. A jsonb value holding NaN, ±Infinity or an invalid Date anywhere is
// refused, and nothing of that checkpoint is committed.

import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Batch, DeliveryGuarantee, FileSystemCheckpointStorage, RecordWriteError, type Sink } from "@exactly/core";
import { pgUrl } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import { sinkContext } from "@exactly/testkit/sink-context";
import { afterAll, describe, expect, it } from "vitest";
import { type ColumnType, postgresSink, RowRejectedError } from "../src/index.ts";
import { dropTable, rollbackPreparedUnder, tableNameFor, withClient } from "./helpers.ts";

interface Row {
  id: number;
  v: unknown;
}

const tables: string[] = [];
const names: string[] = [];

afterAll(async () => {
  for (const name of names) await rollbackPreparedUnder(pgUrl(), name);
  for (const table of tables) await dropTable(pgUrl(), table);
});

function freshTable(): string {
  const table = tableNameFor();
  tables.push(table);
  return table;
}

function freshName(label: string): string {
  const name = uniqueName(`values-${label}`);
  names.push(name);
  return name;
}

function causeOf<E>(error: unknown, type: abstract new (...args: never[]) => E): E | undefined {
  for (let e = error; e instanceof Error; e = e.cause) if (e instanceof type) return e;
  return undefined;
}

function batchOf(values: unknown[], from: number): Batch<Row> {
  return {
    values: values.map((v, i) => ({ id: from + i, v })),
    positions: values.map((_v, i) => ({ source: "s", split: "0", offset: from + i })),
    timestamps: undefined,
  };
}

/** The column kinds of the table, as mapped and as the column's own type. */
const KINDS = [
  "text",
  "integer",
  "double precision",
  "numeric",
  "boolean",
  "timestamptz",
  "jsonb",
  "uuid",
  "bytea",
] as const satisfies readonly ColumnType[];

const NULL = "NULL";
/** Stored: the server's text form of what the column holds (`SELECT v::text`, TimeZone UTC). */
const as = (text: string) => `\`${text}\``;
/** Refused before anything of the checkpoint commits: the RowRejectedError's SQLSTATE. */
const no = (sqlstate: string) => `✗ ${sqlstate}`;

/** A value no column but jsonb takes (an object, an array, a Map …), and what jsonb makes of it. */
function onlyJson(label: string, value: unknown, jsonb: string): Entry {
  return [
    label,
    value,
    [no("42804"), no("22P02"), no("22P02"), no("22P02"), no("22P02"), no("22P02"), jsonb, no("22P02"), no("42804")],
  ];
}

type Entry = readonly [label: string, value: unknown, cells: readonly string[]];

const VALUES: readonly Entry[] = [
  ["undefined", undefined, [NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL]],
  ["null", null, [NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL]],
  [
    '"abc"',
    "abc",
    [as("abc"), no("22P02"), no("22P02"), no("22P02"), no("22P02"), no("22007"), as('"abc"'), no("22P02"), no("42804")],
  ],
  [
    '"2024-01-02 03:04:05+01"',
    "2024-01-02 03:04:05+01",
    [
      as("2024-01-02 03:04:05+01"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      as("2024-01-02 02:04:05+00"),
      as('"2024-01-02 03:04:05+01"'),
      no("22P02"),
      no("42804"),
    ],
  ],
  [
    '"0b7f6c1e-8d4a-4c1b-9a3e-2f5d6c7b8a90"',
    "0b7f6c1e-8d4a-4c1b-9a3e-2f5d6c7b8a90",
    [
      as("0b7f6c1e-8d4a-4c1b-9a3e-2f5d6c7b8a90"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22007"),
      as('"0b7f6c1e-8d4a-4c1b-9a3e-2f5d6c7b8a90"'),
      as("0b7f6c1e-8d4a-4c1b-9a3e-2f5d6c7b8a90"),
      no("42804"),
    ],
  ],
  [
    "42",
    42,
    [
      as("42"),
      as("42"),
      as("42"),
      as("42"),
      no("22P02"),
      as("1970-01-01 00:00:00.042+00"),
      as("42"),
      no("22P02"),
      no("42804"),
    ],
  ],
  [
    "1.5",
    1.5,
    [
      as("1.5"),
      no("22P02"),
      as("1.5"),
      as("1.5"),
      no("22P02"),
      as("1970-01-01 00:00:00.001+00"),
      as("1.5"),
      no("22P02"),
      no("42804"),
    ],
  ],
  [
    "-0",
    -0,
    [as("0"), as("0"), as("-0"), as("0"), no("22P02"), as("1970-01-01 00:00:00+00"), as("0"), no("22P02"), no("42804")],
  ],
  [
    "NaN",
    Number.NaN,
    [as("NaN"), no("22P02"), as("NaN"), as("NaN"), no("22P02"), no("22P02"), no("22P02"), no("22P02"), no("42804")],
  ],
  [
    "Infinity",
    Number.POSITIVE_INFINITY,
    [
      as("Infinity"),
      no("22P02"),
      as("Infinity"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("42804"),
    ],
  ],
  [
    "-Infinity",
    Number.NEGATIVE_INFINITY,
    [
      as("-Infinity"),
      no("22P02"),
      as("-Infinity"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("42804"),
    ],
  ],
  [
    "12n",
    12n,
    [as("12"), as("12"), as("12"), as("12"), no("22P02"), no("22P02"), as('"12"'), no("22P02"), no("42804")],
  ],
  [
    "2n ** 64n",
    2n ** 64n,
    [
      as("18446744073709551616"),
      no("22003"),
      as("1.8446744073709552e+19"),
      as("18446744073709551616"),
      no("22P02"),
      no("22P02"),
      as('"18446744073709551616"'),
      no("22P02"),
      no("42804"),
    ],
  ],
  [
    "true",
    true,
    [as("true"), no("22P02"), no("22P02"), no("22P02"), as("true"), no("22P02"), as("true"), no("22P02"), no("42804")],
  ],
  [
    'new Date("2024-01-02T03:04:05.678Z")',
    new Date("2024-01-02T03:04:05.678Z"),
    [
      no("42804"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      as("2024-01-02 03:04:05.678+00"),
      as('"2024-01-02T03:04:05.678Z"'),
      no("22P02"),
      no("42804"),
    ],
  ],
  [
    "new Date(NaN)",
    new Date(Number.NaN),
    [
      no("42804"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("42804"),
    ],
  ],
  [
    '"a\\u0000b"',
    "a\u0000b",
    [
      no("22021"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22021"),
      no("22P05"),
      no("22P02"),
      no("42804"),
    ],
  ],
  [
    '"\\uD800"',
    "\uD800",
    [
      no("22021"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22021"),
      no("22P02"),
      no("22P02"),
      no("42804"),
    ],
  ],
  [
    "Buffer.from([1, 2, 255])",
    Buffer.from([1, 2, 255]),
    [
      no("42804"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      as('{"data": [1, 2, 255], "type": "Buffer"}'),
      no("22P02"),
      as("\\x0102ff"),
    ],
  ],
  [
    "new Uint8Array([1, 2, 255])",
    new Uint8Array([1, 2, 255]),
    [
      no("42804"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      no("22P02"),
      as("\\x0102ff"),
    ],
  ],
  onlyJson('new Map([["a", 1]])', new Map([["a", 1]]), no("22P02")),
  onlyJson("new Set([1])", new Set([1]), no("22P02")),
  onlyJson("() => 1", () => 1, no("22P02")),
  onlyJson('Symbol("s")', Symbol("s"), no("22P02")),
  onlyJson("{ a: 1, b: [true, null] }", { a: 1, b: [true, null] }, as('{"a": 1, "b": [true, null]}')),
  onlyJson(
    "{ n: 12n, at: new Date(0), gone: undefined }",
    { n: 12n, at: new Date(0), gone: undefined },
    as('{"n": "12", "at": "1970-01-01T00:00:00.000Z"}'),
  ),
  onlyJson("{ x: NaN }", { x: Number.NaN }, no("22P02")),
  onlyJson("[1, [-Infinity]]", [1, [Number.NEGATIVE_INFINITY]], no("22P02")),
  onlyJson("{ at: new Date(NaN) }", { at: new Date(Number.NaN) }, no("22P02")),
  onlyJson("[new Date(NaN)]", [new Date(Number.NaN)], no("22P02")),
  onlyJson("[undefined]", [undefined], no("22P02")),
  onlyJson('{ s: "a\\u0000b" }', { s: "a\u0000b" }, no("22P05")),
  onlyJson('{ s: "\\uD800" }', { s: "\uD800" }, no("22P02")),
  onlyJson("{ m: new Map() }", { m: new Map() }, no("22P02")),
];

/** The table as Markdown, as the guide shows it. */
function markdown(cells: (kind: number, row: number) => string): string {
  const lines = [
    `| value | ${KINDS.map((k) => `\`${k}\``).join(" | ")} |`,
    `| --- | ${KINDS.map(() => "---").join(" | ")} |`,
    ...VALUES.map(([label], row) => `| \`${label}\` | ${KINDS.map((_k, kind) => cells(kind, row)).join(" | ")} |`),
  ];
  return `${lines.join("\n")}\n`;
}

const expected = markdown((kind, row) => (VALUES[row] as Entry)[2][kind] as string);

/** What a sink did with each value in a column of `kind`: each value alone, in a checkpoint of its own. */
async function observed(kind: ColumnType): Promise<string[]> {
  const table = freshTable();
  await withClient(pgUrl(), (c) => c.query(`CREATE TABLE "${table}" (id integer NOT NULL, v ${kind})`));
  const sink = postgresSink<Row>({
    connection: pgUrl(),
    guarantee: DeliveryGuarantee.AT_LEAST_ONCE,
    table: {
      table,
      columns: [
        { name: "id", type: "integer" },
        { name: "v", type: kind },
      ],
      write: "append",
    },
  })();
  await sink.open(sinkContext("values"));
  const cells: string[] = [];
  try {
    for (const [row, [label, value]] of VALUES.entries()) {
      try {
        await sink.writeBatch(batchOf([value], row));
        await sink.snapshotState(row + 1);
        cells.push("stored");
      } catch (error) {
        const write = causeOf(error, RecordWriteError);
        const rejected = causeOf(error, RowRejectedError);
        if (!write || !rejected) throw new Error(`${label} in ${kind}: not a record-write error`, { cause: error });
        expect(write.position, `${label} in ${kind}`).toEqual({ source: "s", split: "0", offset: row });
        cells.push(no(rejected.sqlstate ?? "no SQLSTATE"));
      }
    }
  } finally {
    await sink.close();
  }
  const stored = await withClient(pgUrl(), async (c) => {
    await c.query("SET TimeZone = 'UTC'");
    return (await c.query(`SELECT id, v::text AS v FROM "${table}"`)).rows;
  });
  const byId = new Map(stored.map((r) => [Number(r.id), r.v === null ? NULL : as(String(r.v))]));
  return cells.map((cell, row) => (cell === "stored" ? (byId.get(row) ?? "stored, but not found") : cell));
}

describe("every JavaScript value in every column kind", () => {
  it("is stored as the table says, or refused with its SQLSTATE as a record-write error naming its position", async () => {
    const byKind: string[][] = [];
    for (const kind of KINDS) byKind.push(await observed(kind));
    expect(markdown((kind, row) => byKind[kind]?.[row] as string)).toBe(expected);
  });

  it("the guide shows this table", async () => {
    const guide = await readFile(new URL("../../../docs/connectors/postgres.md", import.meta.url), "utf8");
    const start = "<!-- values-table: connectors/postgres/test/postgres-values.test.ts -->\n";
    const from = guide.indexOf(start);
    const to = guide.indexOf("<!-- /values-table -->", from);
    expect(from, "the guide's values table markers").toBeGreaterThanOrEqual(0);
    expect(guide.slice(from + start.length, to)).toBe(expected);
  });
});

describe("jsonb refuses NaN, ±Infinity and invalid Dates anywhere in a value", () => {
  const placements: ReadonlyArray<[string, unknown]> = [
    ["an invalid Date", new Date(Number.NaN)],
    ["an invalid Date nested in objects", { a: { at: new Date("not a date") } }],
    ["an invalid Date in an array", [1, new Date(Number.NaN)]],
    ["NaN deep inside", { a: [{ b: Number.NaN }] }],
    ["-Infinity deep inside", [[{ b: Number.NEGATIVE_INFINITY }]]],
  ];

  it.each(["two-phase", "write-ahead"] as const)(
    "%s: a record holding one fails the write naming its position; nothing of the checkpoint commits",
    async (exactlyOnce) => {
      const table = freshTable();
      await withClient(pgUrl(), (c) => c.query(`CREATE TABLE "${table}" (id integer NOT NULL, v jsonb)`));
      const passed: string[] = [];
      for (const [label, bad] of placements) {
        const sink: Sink<Row> = postgresSink<Row>({
          connection: pgUrl(),
          exactlyOnce,
          name: freshName(exactlyOnce),
          // Every write-out goes into the open transaction at once: rows before the bad one are sent.
          flushRows: 1,
          table: {
            table,
            columns: [
              { name: "id", type: "integer" },
              { name: "v", type: "jsonb" },
            ],
            write: "append",
          },
        })();
        await sink.open(
          sinkContext("jsonb", {
            storage: new FileSystemCheckpointStorage(await mkdtemp(join(tmpdir(), "exactly-pg-v-"))),
          }),
        );
        try {
          await sink.writeBatch(batchOf([{ ok: 1 }, { ok: 2 }], 0));
          const error = await Promise.resolve(sink.writeBatch(batchOf([{ ok: 3 }, bad], 2))).then(
            () => undefined,
            (e: unknown) => e,
          );
          const write = causeOf(error, RecordWriteError);
          if (!write) passed.push(`${label}: ${error === undefined ? "written" : String(error)}`);
          else {
            expect(write.position, label).toEqual({ source: "s", split: "0", offset: 3 });
            expect(causeOf(error, RowRejectedError)?.sqlstate, label).toBe("22P02");
          }
        } finally {
          // The job fails here: the sink is closed, its open transaction rolled back.
          await sink.close();
        }
      }
      expect(passed).toEqual([]);
      const rows = await withClient(pgUrl(), async (c) => (await c.query(`SELECT id FROM "${table}"`)).rows);
      expect(rows).toEqual([]);
    },
  );
});
