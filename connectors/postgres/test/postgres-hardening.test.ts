// The Postgres sinks at their edges, against the real server: a COPY refusal whose CONTEXT
// starts with another line still names the record; upsert keys that Postgres compares equal
// but whose text differs are one key (or the failure names both records); JSON values are
// checked as values (a literal backslash-u0000 is text, a real NUL is refused); what would be
// stored changed is refused; a sink closing with prepared transactions says which it leaves
// for recovery; and a refused login is a ConfigurationError without the password in it.

import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import {
  ConfigurationError,
  GeneratorSource,
  type Logger,
  RecordWriteError,
  StreamJob,
  silentLogger,
} from "@exactly/core";
import { pgUrl } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import { sinkContext } from "@exactly/testkit/sink-context";
import { afterAll, describe, expect, it } from "vitest";
import { PostgresTwoPhaseSink, PostgresWriteAheadSink, postgresSink, RowRejectedError } from "../src/index.ts";
import { dropTable, preparedUnder, rollbackPreparedUnder, tableNameFor, withClient } from "./helpers.ts";

const tables: string[] = [];
const names: string[] = [];
const roles: string[] = [];

function freshTable(): string {
  const table = tableNameFor();
  tables.push(table);
  return table;
}

function freshName(label: string): string {
  const name = uniqueName(`hard-${label}`);
  names.push(name);
  return name;
}

afterAll(async () => {
  for (const name of names) await rollbackPreparedUnder(pgUrl(), name);
  for (const table of tables) await dropTable(pgUrl(), table);
  for (const role of roles) await withClient(pgUrl(), (c) => c.query(`DROP ROLE IF EXISTS "${role}"`));
});

function causeOf<E>(error: unknown, type: abstract new (...args: never[]) => E): E | undefined {
  for (let e = error; e instanceof Error; e = e.cause) if (e instanceof type) return e;
  return undefined;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e: unknown) => e,
  );
}

const at = (offset: number) => ({ source: "test", split: "0", offset });

function batchOf<T>(values: T[]) {
  return { values, positions: values.map((_v, i) => at(i)), timestamps: undefined };
}

describe("a COPY refusal whose CONTEXT does not start with COPY", () => {
  it("write-ahead append: a jsonb column given text that is not JSON fails naming the record's position and column", async () => {
    const table = freshTable();
    await withClient(pgUrl(), (c) => c.query(`CREATE TABLE "${table}" (id bigint NOT NULL, doc jsonb)`));
    const bad = 2_345;
    const job = new StreamJob({
      name: "pg-hardening-json",
      parallelism: 1,
      checkpoint: { storage: await mkdtemp(join(tmpdir(), "exactly-pg-hard-")), intervalMs: 100 },
      restart: { maxRestarts: 0, initialDelayMs: 50 },
      logger: silentLogger,
      batchSize: 500,
    });
    job
      .fromSource(
        new GeneratorSource({
          count: 5_000,
          splits: 1,
          ratePerSecond: 50_000,
          generate: (i) => ({ id: i, doc: i === bad ? "{not json" : `{"n": ${i}}` }),
        }),
      )
      .sinkTo(
        postgresSink<{ id: number; doc: string }>({
          connection: pgUrl(),
          exactlyOnce: "write-ahead",
          name: freshName("wal-json"),
          // Text passed through to a jsonb column: the server is the first to parse it.
          table: {
            table,
            columns: [
              { name: "id", type: "bigint" },
              { name: "doc", type: "text" },
            ],
            write: "append",
          },
        }),
        { name: "pg-out" },
      );
    const error = await rejection(job.execute());
    const write = causeOf(error, RecordWriteError);
    expect(write, String(error)).toBeInstanceOf(RecordWriteError);
    expect(write?.position).toEqual({ source: "generator", split: "0", offset: bad });
    const rejected = write?.cause as RowRejectedError;
    expect(rejected).toBeInstanceOf(RowRejectedError);
    expect(rejected.sqlstate).toBe("22P02");
    expect(rejected.column).toBe("doc");
  });
});

describe("upsert keys Postgres compares equal but whose text differs", () => {
  async function upserted<K>(
    keyType: string,
    mappedType: "uuid" | "numeric" | "double precision" | "timestamptz",
    keys: K[],
  ): Promise<{ error: unknown; rows: Array<{ k: string; v: number }> }> {
    const table = freshTable();
    await withClient(pgUrl(), (c) => c.query(`CREATE TABLE "${table}" (k ${keyType} PRIMARY KEY, v integer)`));
    const sink = new PostgresTwoPhaseSink<{ k: K; v: number }>({
      connection: pgUrl(),
      name: freshName("keys"),
      table: {
        table,
        columns: [
          { name: "k", type: mappedType },
          { name: "v", type: "integer" },
        ],
        write: { upsertOn: ["k"] },
      },
    });
    await sink.open(sinkContext("keys"));
    try {
      await sink.writeBatch(batchOf(keys.map((k, v) => ({ k, v }))));
      const error = await rejection(sink.snapshotState(1).then(() => sink.notifyCheckpointComplete(1)));
      const rows = await withClient(
        pgUrl(),
        async (c) => (await c.query(`SELECT k::text AS k, v FROM "${table}" ORDER BY k`)).rows,
      );
      return { error, rows: rows.map((r) => ({ k: String(r.k), v: Number(r.v) })) };
    } finally {
      await sink.close();
    }
  }

  it("uuid keys in upper and lower case, with and without hyphens, are one key: the last record wins", async () => {
    const id = randomUUID();
    const { error, rows } = await upserted("uuid", "uuid", [id.toUpperCase(), id, id.replaceAll("-", "")]);
    expect(error).toBeUndefined();
    expect(rows).toEqual([{ k: id, v: 2 }]);
  });

  it("numeric keys 1, '1.0', '+01.00e0' and 1 as a bigint are one key; the last record wins", async () => {
    const { error, rows } = await upserted("numeric", "numeric", [1, "1.0", "+01.00e0", 1n, "2", "0.2e1"]);
    expect(error).toBeUndefined();
    expect(rows.map((r) => r.v)).toEqual([3, 5]);
  });

  it("double precision keys 1 and '1.0', -0 and 0 are one key each", async () => {
    const { error, rows } = await upserted("double precision", "double precision", [1, "1.0", -0, "0"]);
    expect(error).toBeUndefined();
    expect(rows.map((r) => r.v).sort()).toEqual([1, 3]);
  });

  it("a Date and a timestamp string of the same instant: the failure names both records", async () => {
    const { error, rows } = await upserted("timestamptz", "timestamptz", [
      "2024-01-02 00:00:00+00",
      new Date("2024-01-01T00:00:00Z"),
      "2024-01-01 01:00:00+01",
    ]);
    const write = causeOf(error, RecordWriteError);
    expect(write, String(error)).toBeInstanceOf(RecordWriteError);
    expect(write?.position).toEqual(at(2));
    expect((write?.cause as RowRejectedError | undefined)?.sqlstate).toBe("21000");
    expect(write?.message).toContain("test[0]@1");
    expect(write?.message).toContain("test[0]@2");
    expect(rows).toEqual([]);
  });

  it("numeric keys that the column's own scale makes equal (numeric(10,2): 1.001 and 1.0): the failure names both records", async () => {
    const { error } = await upserted("numeric(10,2)", "numeric", ["5", "1.001", "1.0"]);
    const write = causeOf(error, RecordWriteError);
    expect(write, String(error)).toBeInstanceOf(RecordWriteError);
    expect(write?.position).toEqual(at(2));
    expect(write?.message).toContain("test[0]@1");
  });
});

describe("JSON values are checked as values", () => {
  it("a string holding a backslash and u0000 is written as it is; a real NUL in a value or key is refused naming the column", async () => {
    const table = freshTable();
    await withClient(pgUrl(), (c) => c.query(`CREATE TABLE "${table}" (id bigint NOT NULL, doc jsonb)`));
    const sink = new PostgresTwoPhaseSink<{ id: number; doc: unknown }>({
      connection: pgUrl(),
      name: freshName("json-nul"),
      table: {
        table,
        columns: [
          { name: "id", type: "bigint" },
          { name: "doc", type: "jsonb" },
        ],
        write: "append",
      },
    });
    await sink.open(sinkContext("json-nul"));
    try {
      await sink.writeBatch(batchOf([{ id: 0, doc: { s: "a\\u0000b", "k\\u0000": ["\\\\u0000"] } }]));
      await sink.snapshotState(1);
      await sink.notifyCheckpointComplete(1);
      const doc = await withClient(pgUrl(), async (c) => (await c.query(`SELECT doc FROM "${table}"`)).rows[0]?.doc);
      expect(doc).toEqual({ s: "a\\u0000b", "k\\u0000": ["\\\\u0000"] });
      for (const doc of [{ s: "a\u0000b" }, { "k\u0000": 1 }, ["\\\u0000"]]) {
        const error = await rejection(sink.writeBatch(batchOf([{ id: 1, doc }])));
        const write = causeOf(error, RecordWriteError);
        expect(write, JSON.stringify(doc)).toBeInstanceOf(RecordWriteError);
        expect(write?.position).toEqual(at(0));
        expect((write?.cause as RowRejectedError | undefined)?.column).toBe("doc");
      }
    } finally {
      await sink.close();
    }
  });
});

describe("a two-phase sink closing with prepared transactions", () => {
  it("ends its open transaction and names the prepared ones it leaves for recovery", async () => {
    const table = freshTable();
    await withClient(pgUrl(), (c) => c.query(`CREATE TABLE "${table}" (id bigint PRIMARY KEY)`));
    const name = freshName("close");
    const warnings: string[] = [];
    const logger: Logger = {
      ...silentLogger,
      warn: (message, fields) => warnings.push(`${message} ${JSON.stringify(fields ?? {})}`),
      error: (message, fields) => warnings.push(`${message} ${JSON.stringify(fields ?? {})}`),
    };
    const sink = new PostgresTwoPhaseSink<{ id: number }>({
      connection: pgUrl(),
      name,
      flushRows: 1,
      table: { table, columns: [{ name: "id", type: "bigint" }], write: "append" },
    });
    await sink.open({ ...sinkContext("close"), logger });
    await sink.writeBatch(batchOf([{ id: 1 }]));
    await sink.snapshotState(1);
    // The next checkpoint's transaction is open (BEGIN sent, a row written) when the job fails.
    await sink.writeBatch(batchOf([{ id: 2 }]));
    const openBefore = await withClient(pgUrl(), async (c) =>
      (await c.query("SELECT state FROM pg_stat_activity WHERE application_name = $1", [`exactly:${name}:0`])).rows.map(
        (r) => String(r.state),
      ),
    );
    expect(openBefore).toEqual(["idle in transaction"]);
    await sink.close();
    expect(await preparedUnder(pgUrl(), name)).toEqual([`${name}:0:1`]);
    const said = warnings.join("\n");
    expect(said).toContain(`${name}:0:1`);
    expect(said).toMatch(/restart/);
    // The open transaction ended: the row it wrote is nowhere, and nothing waits on its lock.
    const ids = await withClient(pgUrl(), async (c) => {
      await c.query("SET lock_timeout = '2s'");
      await c.query(`INSERT INTO "${table}" (id) VALUES (2)`);
      return (await c.query(`SELECT id FROM "${table}"`)).rows.map((r) => Number(r.id));
    });
    expect(ids).toEqual([2]);
  });
});

describe("a login the server refuses", () => {
  function urlFor(role: string, password: string, database = new URL(pgUrl()).pathname.slice(1)): string {
    const url = new URL(pgUrl());
    url.username = role;
    url.password = password;
    url.pathname = `/${database}`;
    return url.toString();
  }

  async function refusedOpen(connection: string, kind: "two-phase" | "write-ahead") {
    const options = {
      connection,
      name: freshName("auth"),
      table: {
        table: "nowhere",
        columns: [{ name: "id", type: "bigint" as const }],
        write: "append" as const,
      },
    };
    const sink = kind === "two-phase" ? new PostgresTwoPhaseSink(options) : new PostgresWriteAheadSink(options);
    const error = await rejection(sink.open(sinkContext("auth")));
    await sink.close().catch(() => {});
    return { error, transient: sink.isTransient(error) };
  }

  it.each(["two-phase", "write-ahead"] as const)(
    "%s: a role that may not log in (28000) and a database that does not exist (3D000) are ConfigurationErrors naming connection, with no password in them",
    async (kind) => {
      const role = `exactly_nologin_${Math.random().toString(36).slice(2, 10)}`;
      roles.push(role);
      const password = `pw-${randomUUID()}`;
      await withClient(pgUrl(), (c) => c.query(`CREATE ROLE "${role}" NOLOGIN PASSWORD 'x'`));
      for (const url of [urlFor(role, password), urlFor("postgres", password, `no_db_${role}`)]) {
        const { error, transient } = await refusedOpen(url, kind);
        expect(error, String(error)).toBeInstanceOf(ConfigurationError);
        expect((error as ConfigurationError).setting).toBe("connection");
        expect(transient).toBe(false);
        expect(inspect(error, { depth: null })).not.toContain(password);
      }
    },
  );

  it("a malformed connection URL with a password is a ConfigurationError without the password", async () => {
    const password = `pw-${randomUUID()}`;
    const { error, transient } = await refusedOpen(`postgres://someone:${password}@127.0.0.1:notaport/db`, "two-phase");
    expect(error, String(error)).toBeInstanceOf(ConfigurationError);
    expect(transient).toBe(false);
    expect(inspect(error, { depth: null })).not.toContain(password);
  });
});

describe("I8: the sinks' own tables are out of the records' reach", () => {
  const columns = [{ name: "sink", type: "text" }] as const;
  it.each([
    ["table", { table: { table: "exactly_progress", columns: [...columns], write: "append" } }],
    ["table", { table: { schema: "s", table: "exactly_prepared_markers", columns: [...columns], write: "append" } }],
    [
      "deadLetter.table",
      {
        table: { table: "t", columns: [...columns], write: "append" },
        deadLetter: { table: "exactly_prepared_markers" },
      },
    ],
  ] as const)("a %s naming a bookkeeping table is refused at construction", (setting, options) => {
    for (const exactlyOnce of ["two-phase", "write-ahead"] as const) {
      const build = () =>
        postgresSink<{ sink: string }>({
          connection: pgUrl(),
          exactlyOnce,
          ...(options as unknown as Pick<Parameters<typeof postgresSink<{ sink: string }>>[0], "table">),
        });
      expect(build).toThrow(ConfigurationError);
      expect(build).toThrow(setting);
    }
  });

  it("a table of that name in another schema than the bookkeeping one is the user's", () => {
    expect(() =>
      postgresSink<{ sink: string }>({
        connection: pgUrl(),
        table: { table: "exactly_progress", columns: [{ name: "sink", type: "text" }], write: "append" },
        bookkeepingSchema: "exactly_books",
      }),
    ).not.toThrow();
  });
});
