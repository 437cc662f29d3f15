// I8 for the Postgres sinks, against the real server: a table mapping, or a dead-letter table,
// that names any of exactly's own tables (prepared markers, write-ahead progress, fences,
// lease records) is refused when the sink opens, in whatever schema the table sits and
// whatever the sink's own bookkeeping schema is. Tables are recognised by what they are: the
// comment the current version puts on them, or, for tables an older version created without
// it, their exact columns and primary key (a lease table may have any name); a table that
// inherits from one is refused too. A table of the user's that only shares a name opens.

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type Batch,
  ConfigurationError,
  DeliveryGuarantee,
  FileSystemCheckpointStorage,
  type Sink,
  type SinkContext,
} from "@exactly/core";
import { pgUrl } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import { sinkContext } from "@exactly/testkit/sink-context";
import { afterAll, describe, expect, it } from "vitest";
import {
  type DeadLetterOptions,
  FENCE_TABLE,
  MARKER_TABLE,
  PostgresConditionalRecord,
  PROGRESS_TABLE,
  postgresSink,
  RECORD_TABLE,
  type TableMapping,
} from "../src/index.ts";
import { rollbackPreparedUnder, withClient } from "./helpers.ts";

type Row = Record<string, unknown>;
const SINKS = ["two-phase", "write-ahead", "at-least-once"] as const;
type SinkKind = (typeof SINKS)[number];

const schemas: string[] = [];
const names: string[] = [];

afterAll(async () => {
  for (const name of names) await rollbackPreparedUnder(pgUrl(), name);
  for (const schema of schemas) await withClient(pgUrl(), (c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
});

/** A schema of the test's own (created), dropped after the file. */
async function freshSchema(label: string): Promise<string> {
  const schema = uniqueName(`bk_${label}`, "_");
  schemas.push(schema);
  await withClient(pgUrl(), (c) => c.query(`CREATE SCHEMA "${schema}"`));
  return schema;
}

function freshName(label: string): string {
  const name = uniqueName(`bk-${label}`);
  names.push(name);
  return name;
}

async function storage(): Promise<SinkContext["storage"]> {
  return new FileSystemCheckpointStorage(await mkdtemp(join(tmpdir(), "exactly-pg-bk-")));
}

async function context(label: string, overrides: Partial<SinkContext> = {}): Promise<SinkContext> {
  return sinkContext(label, { storage: await storage(), ...overrides });
}

function sinkOf(
  kind: SinkKind,
  table: TableMapping<Row>,
  options: { bookkeepingSchema?: string; deadLetter?: DeadLetterOptions; name?: string } = {},
): Sink<Row> {
  if (kind === "at-least-once")
    return postgresSink<Row>({ connection: pgUrl(), guarantee: DeliveryGuarantee.AT_LEAST_ONCE, table, ...options })();
  return postgresSink<Row>({
    connection: pgUrl(),
    exactlyOnce: kind,
    name: options.name ?? freshName(kind),
    nameLockWaitMs: 1000,
    table,
    ...options,
  })();
}

/** What open threw (undefined if it opened); the sink is closed either way. */
async function openError(sink: Sink<Row>, ctx: SinkContext): Promise<unknown> {
  try {
    await sink.open(ctx);
    return undefined;
  } catch (error) {
    return error;
  } finally {
    await sink.close().catch(() => {});
  }
}

function expectRefused(error: unknown, setting: string, table: string): void {
  expect(error, String(error)).toBeInstanceOf(ConfigurationError);
  expect((error as ConfigurationError).setting).toBe(setting);
  expect((error as Error).message).toContain(table);
}

function rows(values: Row[], from = 0): Batch<Row> {
  return {
    values,
    positions: values.map((_v, i) => ({ source: "s", split: "0", offset: from + i })),
    timestamps: undefined,
  };
}

/** exactly's own tables, each with the columns a mapping onto it would name. */
const OWN = [
  { kind: "markers", table: MARKER_TABLE, columns: ["gid", "sink", "subtask", "checkpoint"] },
  { kind: "progress", table: PROGRESS_TABLE, columns: ["sink", "subtask", "checkpoint"] },
  { kind: "fences", table: FENCE_TABLE, columns: ["sink", "subtask", "epoch"] },
  { kind: "lease records", table: RECORD_TABLE, columns: ["name", "version", "value"] },
] as const;

const TYPES: Record<string, "text" | "integer" | "bigint" | "jsonb"> = {
  gid: "text",
  sink: "text",
  subtask: "integer",
  checkpoint: "bigint",
  epoch: "bigint",
  name: "text",
  version: "bigint",
  value: "jsonb",
};

function mappingOnto(schema: string, table: string, columns: readonly string[]): TableMapping<Row> {
  return { schema, table, columns: columns.map((name) => ({ name, type: TYPES[name] ?? "text" })), write: "append" };
}

/**
 * Every table of exactly's own, in `schema`, as this version creates them: a two-phase sink in
 * a sharded job (markers and fences), a write-ahead sink (progress), a lease record.
 */
async function createOwnTables(schema: string): Promise<void> {
  await withClient(pgUrl(), (c) => c.query(`CREATE TABLE "${schema}"."data" (id bigint)`));
  const table: TableMapping<Row> = {
    schema,
    table: "data",
    columns: [{ name: "id", type: "bigint" }],
    write: "append",
  };
  const twoPhase = sinkOf("two-phase", table);
  await twoPhase.open(await context("own", { ownership: { shard: { index: 0, count: 1 }, epoch: 1 } }));
  await twoPhase.close();
  const writeAhead = sinkOf("write-ahead", table);
  await writeAhead.open(await context("own"));
  await writeAhead.close();
  const record = new PostgresConditionalRecord({ connection: pgUrl(), schema, name: "shard-0" });
  await record.replace(undefined, { epoch: 1 });
  await record.close();
}

describe("I8: exactly's own tables are out of every mapping's reach, in any schema", () => {
  it("I8: a write-ahead sink's progress table in another schema cannot be a second sink's target: it is refused at open and the progress stays", async () => {
    const victimSchema = await freshSchema("victim");
    const otherSchema = await freshSchema("other");
    await withClient(pgUrl(), (c) => c.query(`CREATE TABLE "${victimSchema}"."orders" (id bigint)`));
    const victimName = freshName("victim");
    const victim = sinkOf(
      "write-ahead",
      { schema: victimSchema, table: "orders", columns: [{ name: "id", type: "bigint" }], write: "append" },
      { name: victimName },
    );
    await victim.open(await context("victim"));
    try {
      await victim.writeBatch(rows([{ id: 1 }, { id: 2 }]));
      await victim.snapshotState(1);
      await victim.notifyCheckpointComplete(1);
      // The review's mapping: progress rows as records, upserted on the table's own key.
      const attacker = sinkOf(
        "write-ahead",
        {
          ...mappingOnto(victimSchema, PROGRESS_TABLE, ["sink", "subtask", "checkpoint"]),
          write: { upsertOn: ["sink", "subtask"] },
        },
        { bookkeepingSchema: otherSchema },
      );
      const error = await openError(attacker, await context("attacker"));
      expectRefused(error, "table", `${victimSchema}.${PROGRESS_TABLE}`);
      const progress = await withClient(
        pgUrl(),
        async (c) =>
          (await c.query(`SELECT checkpoint FROM "${victimSchema}"."${PROGRESS_TABLE}" WHERE sink = $1`, [victimName]))
            .rows,
      );
      expect(progress.map((r) => Number(r.checkpoint))).toEqual([1]);
    } finally {
      await victim.close();
    }
  });

  it("I8: each of exactly's tables (markers, progress, fences, lease records) as the target of each sink is refused at open, naming table and the table", async () => {
    const home = await freshSchema("home");
    const other = await freshSchema("books");
    await createOwnTables(home);
    const opened: string[] = [];
    for (const own of OWN) {
      for (const kind of SINKS) {
        const sink = sinkOf(kind, mappingOnto(home, own.table, own.columns), { bookkeepingSchema: other });
        const error = await openError(sink, await context(`${kind}-onto-${own.table}`));
        if (!(error instanceof ConfigurationError)) opened.push(`${kind} onto ${own.table}: ${String(error)}`);
        else {
          expectRefused(error, "table", `${home}.${own.table}`);
          expect(error.message).toContain("recognised by its comment");
        }
      }
    }
    expect(opened).toEqual([]);
  });

  it("I8: each of exactly's tables as the dead-letter table is refused at open, naming deadLetter.table", async () => {
    const home = await freshSchema("home");
    const other = await freshSchema("books");
    await createOwnTables(home);
    const opened: string[] = [];
    for (const own of OWN) {
      for (const kind of SINKS) {
        const sink = sinkOf(
          kind,
          { schema: home, table: "data", columns: [{ name: "id", type: "bigint" }], write: "append" },
          { bookkeepingSchema: other, deadLetter: { schema: home, table: own.table } },
        );
        const error = await openError(sink, await context(`${kind}-letters-${own.table}`));
        if (!(error instanceof ConfigurationError)) opened.push(`${kind} letters into ${own.table}: ${String(error)}`);
        else expectRefused(error, "deadLetter.table", `${home}.${own.table}`);
      }
    }
    expect(opened).toEqual([]);
  });

  it("I8: tables an older version created (no comment; a lease table under a name of its own) are recognised by their columns and key", async () => {
    const old = await freshSchema("old");
    const other = await freshSchema("books");
    // The definitions every earlier version created, as they were.
    await withClient(pgUrl(), async (c) => {
      await c.query(
        `CREATE TABLE "${old}"."${MARKER_TABLE}" (gid text PRIMARY KEY, sink text NOT NULL, subtask integer NOT NULL, checkpoint bigint NOT NULL, prepared_at timestamptz NOT NULL DEFAULT now())`,
      );
      await c.query(
        `CREATE TABLE "${old}"."${PROGRESS_TABLE}" (sink text NOT NULL, subtask integer NOT NULL, checkpoint bigint NOT NULL, committed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (sink, subtask))`,
      );
      await c.query(
        `CREATE TABLE "${old}"."${FENCE_TABLE}" (sink text NOT NULL, subtask integer NOT NULL, epoch bigint NOT NULL, raised_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (sink, subtask))`,
      );
      await c.query(
        `CREATE TABLE "${old}"."shard_leases" (name text PRIMARY KEY, version bigint NOT NULL, value jsonb NOT NULL)`,
      );
    });
    const opened: string[] = [];
    for (const own of OWN) {
      const table = own.table === RECORD_TABLE ? "shard_leases" : own.table;
      const sink = sinkOf("two-phase", mappingOnto(old, table, own.columns), { bookkeepingSchema: other });
      const error = await openError(sink, await context(`old-${own.table}`));
      if (!(error instanceof ConfigurationError)) opened.push(`onto ${table}: ${String(error)}`);
      else {
        expectRefused(error, "table", `${old}.${table}`);
        expect(error.message).toContain("recognised by its columns and primary key");
      }
    }
    expect(opened).toEqual([]);
  });

  it("I8: the comment alone marks one of exactly's tables: a progress table with a column added is still refused", async () => {
    const home = await freshSchema("home");
    const other = await freshSchema("books");
    await createOwnTables(home);
    await withClient(pgUrl(), (c) => c.query(`ALTER TABLE "${home}"."${PROGRESS_TABLE}" ADD COLUMN note text`));
    const sink = sinkOf("at-least-once", mappingOnto(home, PROGRESS_TABLE, ["sink", "subtask", "checkpoint"]), {
      bookkeepingSchema: other,
    });
    const error = await openError(sink, await context("altered"));
    expectRefused(error, "table", `${home}.${PROGRESS_TABLE}`);
  });

  it("I8: a table that inherits from one of exactly's tables (its rows show in the parent) is refused", async () => {
    const home = await freshSchema("home");
    const other = await freshSchema("books");
    await createOwnTables(home);
    await withClient(pgUrl(), (c) =>
      c.query(`CREATE TABLE "${home}"."progress_child" () INHERITS ("${home}"."${PROGRESS_TABLE}")`),
    );
    const sink = sinkOf("write-ahead", mappingOnto(home, "progress_child", ["sink", "subtask", "checkpoint"]), {
      bookkeepingSchema: other,
    });
    const error = await openError(sink, await context("child"));
    expectRefused(error, "table", `${home}.progress_child`);
    expect((error as Error).message).toContain(`${home}.${PROGRESS_TABLE}`);
  });

  it("I8: a user's table that only shares a name (exactly_progress, other columns) or some columns opens and takes rows", async () => {
    const mine = await freshSchema("mine");
    const other = await freshSchema("books");
    await withClient(pgUrl(), async (c) => {
      await c.query(`CREATE TABLE "${mine}"."${PROGRESS_TABLE}" (id bigint, note text)`);
      // The progress table's columns without its key: not what the sinks create.
      await c.query(`CREATE TABLE "${mine}"."lookalike" (sink text, subtask integer, checkpoint bigint, note text)`);
    });
    for (const kind of SINKS) {
      for (const [table, columns] of [
        [PROGRESS_TABLE, ["id", "note"]],
        ["lookalike", ["sink", "subtask", "checkpoint"]],
      ] as const) {
        const mapping: TableMapping<Row> = {
          schema: mine,
          table,
          columns: columns.map((name) => ({
            name,
            type: name === "id" || name === "checkpoint" ? "bigint" : name === "subtask" ? "integer" : "text",
          })),
          write: "append",
        };
        const sink = sinkOf(kind, mapping, { bookkeepingSchema: other });
        await sink.open(await context(`mine-${kind}`));
        try {
          const value: Row = Object.fromEntries(columns.map((c) => [c, c === "note" || c === "sink" ? kind : 1]));
          await sink.writeBatch(rows([value]));
          await sink.snapshotState(1);
          await sink.notifyCheckpointComplete(1);
        } finally {
          await sink.close();
        }
      }
    }
    const counts = await withClient(pgUrl(), async (c) => ({
      named: Number((await c.query(`SELECT count(*) AS n FROM "${mine}"."${PROGRESS_TABLE}"`)).rows[0]?.n),
      lookalike: Number((await c.query(`SELECT count(*) AS n FROM "${mine}"."lookalike"`)).rows[0]?.n),
    }));
    expect(counts).toEqual({ named: SINKS.length, lookalike: SINKS.length });
  });
});
