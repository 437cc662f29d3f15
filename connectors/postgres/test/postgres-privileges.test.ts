// A Postgres role without the rights a sink needs, against the real server (it trusts local
// logins, so each test connects as a role of its own by the URL's user name): the sink refuses
// to open with a ConfigurationError naming the setting, the privilege and the table (or schema,
// or sequence), and a privilege revoked while the sink runs fails its next write the same way.
// A ConfigurationError is permanent: the job fails at once instead of restarting.

import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type Batch,
  ConfigurationError,
  DeliveryGuarantee,
  FileSystemCheckpointStorage,
  GeneratorSource,
  type Sink,
  type SinkContext,
  StreamJob,
  silentLogger,
} from "@exactly/core";
import { classifyFailure } from "@exactly/core/internal";
import { pgUrl } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import { sinkContext } from "@exactly/testkit/sink-context";
import { afterAll, describe, expect, it } from "vitest";
import { postgresSink, type TableMapping } from "../src/index.ts";
import { rollbackPreparedUnder, withClient } from "./helpers.ts";

interface Row {
  id: number;
  v: string;
}

const SINKS = ["two-phase", "write-ahead", "at-least-once"] as const;
type SinkKind = (typeof SINKS)[number];

const schemas: string[] = [];
const roles: string[] = [];
const names: string[] = [];

afterAll(async () => {
  for (const name of names) await rollbackPreparedUnder(pgUrl(), name);
  await withClient(pgUrl(), async (c) => {
    for (const schema of schemas) await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    for (const role of roles) {
      await c.query(`DROP OWNED BY "${role}"`).catch(() => {});
      await c.query(`DROP ROLE IF EXISTS "${role}"`);
    }
  });
});

/** A schema with a table `t (id bigint PRIMARY KEY, v text)`, and a login role that may use the schema and nothing else yet. */
async function setUp(label: string): Promise<{ schema: string; role: string; url: string }> {
  const suffix = randomBytes(4).toString("hex");
  const schema = `priv_${label}_${suffix}`;
  const role = `exactly_priv_${suffix}`;
  schemas.push(schema);
  roles.push(role);
  await withClient(pgUrl(), async (c) => {
    await c.query(`CREATE ROLE "${role}" LOGIN`);
    await c.query(`CREATE SCHEMA "${schema}"`);
    await c.query(`GRANT USAGE ON SCHEMA "${schema}" TO "${role}"`);
    await c.query(`CREATE TABLE "${schema}"."t" (id bigint PRIMARY KEY, v text)`);
  });
  const url = new URL(pgUrl());
  url.username = role;
  url.password = "";
  return { schema, role, url: url.toString() };
}

function grant(statement: string): Promise<unknown> {
  return withClient(pgUrl(), (c) => c.query(statement));
}

interface SinkOptions {
  write?: TableMapping<Row>["write"];
  bookkeepingSchema?: string;
  table?: string;
  flushRows?: number;
}

function sinkOf(kind: SinkKind, connection: string, schema: string, options: SinkOptions = {}): Sink<Row> {
  return factoryOf(kind, connection, schema, options)();
}

/** The sink factory for `t` in `schema` (or `options.table`), connecting as `connection` says. */
function factoryOf(kind: SinkKind, connection: string, schema: string, options: SinkOptions = {}): () => Sink<Row> {
  const table: TableMapping<Row> = {
    schema,
    table: options.table ?? "t",
    columns: [
      { name: "id", type: "bigint" },
      { name: "v", type: "text" },
    ],
    write: options.write ?? "append",
  };
  const common = {
    connection,
    table,
    ...(options.bookkeepingSchema ? { bookkeepingSchema: options.bookkeepingSchema } : {}),
    ...(options.flushRows ? { flushRows: options.flushRows } : {}),
  };
  if (kind === "at-least-once") return postgresSink<Row>({ ...common, guarantee: DeliveryGuarantee.AT_LEAST_ONCE });
  const name = uniqueName(`priv-${kind}`);
  names.push(name);
  return postgresSink<Row>({ ...common, exactlyOnce: kind, name, nameLockWaitMs: 1000 });
}

async function context(): Promise<SinkContext> {
  return sinkContext("priv", {
    storage: new FileSystemCheckpointStorage(await mkdtemp(join(tmpdir(), "exactly-pg-priv-"))),
  });
}

/** What open threw (undefined if it opened); the sink is closed either way. */
async function openError(sink: Sink<Row>): Promise<unknown> {
  try {
    await sink.open(await context());
    return undefined;
  } catch (error) {
    return error;
  } finally {
    await sink.close().catch(() => {});
  }
}

function configurationError(error: unknown): ConfigurationError | undefined {
  for (let e = error; e instanceof Error; e = e.cause) if (e instanceof ConfigurationError) return e;
  return undefined;
}

/** A ConfigurationError naming `setting` and saying `what`, which no restart retries. */
function expectRefused(error: unknown, sink: Sink<Row>, setting: string, what: string): void {
  const refused = configurationError(error);
  expect(refused, String(error)).toBeInstanceOf(ConfigurationError);
  expect(refused?.setting).toBe(setting);
  expect(refused?.message).toContain(what);
  expect(classifyFailure(error, [(e) => (sink as { isTransient(e: unknown): boolean }).isTransient(e)])).toBe(
    "permanent",
  );
}

function rows(ids: number[]): Batch<Row> {
  return {
    values: ids.map((id) => ({ id, v: `v${id}` })),
    positions: ids.map((offset) => ({ source: "s", split: "0", offset })),
    timestamps: undefined,
  };
}

describe("a role without the privileges a sink needs", () => {
  it.each(SINKS)("%s: without INSERT on the table, open refuses naming table and INSERT on the table", async (kind) => {
    const { schema, role, url } = await setUp("insert");
    await grant(`GRANT SELECT ON "${schema}"."t" TO "${role}"`);
    await grant(`GRANT CREATE ON SCHEMA "${schema}" TO "${role}"`);
    const sink = sinkOf(kind, url, schema);
    expectRefused(await openError(sink), sink, "table", `INSERT on ${schema}.t`);
  });

  it.each(SINKS)(
    "%s: upserting without UPDATE on the columns it updates, open refuses naming UPDATE on the table",
    async (kind) => {
      const { schema, role, url } = await setUp("update");
      await grant(`GRANT SELECT, INSERT ON "${schema}"."t" TO "${role}"`);
      await grant(`GRANT CREATE ON SCHEMA "${schema}" TO "${role}"`);
      const sink = sinkOf(kind, url, schema, { write: { upsertOn: ["id"] } });
      expectRefused(await openError(sink), sink, "table", `UPDATE on ${schema}.t`);
    },
  );

  it.each(SINKS)(
    "%s: a role granted no more than the guide lists (column grants) opens, appends and upserts",
    async (kind) => {
      const { schema, role, url } = await setUp("enough");
      await grant(`CREATE TABLE "${schema}"."a" (id bigint, v text, other text)`);
      await grant(`GRANT INSERT (id, v) ON "${schema}"."a" TO "${role}"`);
      await grant(`GRANT INSERT (id, v), SELECT (id, v), UPDATE (v) ON "${schema}"."t" TO "${role}"`);
      await grant(`GRANT CREATE ON SCHEMA "${schema}" TO "${role}"`);
      for (const [table, write] of [
        ["a", "append"],
        ["t", { upsertOn: ["id"] }],
      ] as const) {
        const sink = sinkOf(kind, url, schema, { table, write });
        await sink.open(await context());
        try {
          for (const checkpoint of [1, 2]) {
            await sink.writeBatch(rows([1, 2]));
            await sink.snapshotState(checkpoint);
            await sink.notifyCheckpointComplete(checkpoint);
          }
        } finally {
          await sink.close();
        }
      }
      const counts = await withClient(pgUrl(), async (c) => ({
        appended: Number((await c.query(`SELECT count(*) AS n FROM "${schema}"."a"`)).rows[0]?.n),
        upserted: Number((await c.query(`SELECT count(*) AS n FROM "${schema}"."t"`)).rows[0]?.n),
      }));
      expect(counts).toEqual({ appended: 4, upserted: 2 });
    },
  );

  it("without USAGE on the table's schema, open refuses naming USAGE on the schema", async () => {
    const { schema, role, url } = await setUp("usage");
    await grant(`REVOKE USAGE ON SCHEMA "${schema}" FROM "${role}"`);
    const sink = sinkOf("two-phase", url, schema);
    expectRefused(await openError(sink), sink, "table", `USAGE on schema ${schema}`);
  });

  it("a serial column the mapping leaves to its default needs USAGE on its sequence: open refuses naming it", async () => {
    const { schema, role, url } = await setUp("serial");
    await grant(`CREATE TABLE "${schema}"."s" (n bigserial, id bigint, v text)`);
    await grant(`GRANT INSERT ON "${schema}"."s" TO "${role}"`);
    await grant(`GRANT CREATE ON SCHEMA "${schema}" TO "${role}"`);
    const sink = sinkOf("write-ahead", url, schema, { table: "s" });
    expectRefused(await openError(sink), sink, "table", `USAGE on sequence ${schema}.s_n_seq`);
  });

  it.each(["two-phase", "write-ahead"] as const)(
    "%s: without CREATE on the bookkeeping schema (its table missing), open refuses naming bookkeepingSchema and CREATE on it",
    async (kind) => {
      const { schema, role, url } = await setUp("create");
      await grant(`GRANT INSERT ON "${schema}"."t" TO "${role}"`);
      const sink = sinkOf(kind, url, schema);
      expectRefused(await openError(sink), sink, "bookkeepingSchema", `CREATE on schema ${schema}`);
    },
  );

  it.each([
    ["two-phase", "exactly_prepared_markers"],
    ["write-ahead", "exactly_progress"],
  ] as const)(
    "%s: a bookkeeping table another role created, which this role may only read, is refused naming bookkeepingSchema and the privilege on %s",
    async (kind, table) => {
      const { schema, role, url } = await setUp("books");
      await grant(`GRANT INSERT, UPDATE ON "${schema}"."t" TO "${role}"`);
      // The table as the sink creates it, by another role (an administrator, or an earlier deployment).
      const owner = sinkOf(kind, pgUrl(), schema);
      await owner.open(await context());
      await owner.close();
      await grant(`GRANT SELECT ON "${schema}"."${table}" TO "${role}"`);
      const sink = sinkOf(kind, url, schema);
      expectRefused(await openError(sink), sink, "bookkeepingSchema", `on ${schema}.${table}`);
    },
  );

  it.each(SINKS)(
    "%s: INSERT revoked while the sink runs: its next write fails with a ConfigurationError naming INSERT on the table",
    async (kind) => {
      const { schema, role, url } = await setUp("revoked");
      await grant(`GRANT SELECT, INSERT ON "${schema}"."t" TO "${role}"`);
      await grant(`GRANT CREATE ON SCHEMA "${schema}" TO "${role}"`);
      const sink = sinkOf(kind, url, schema, { flushRows: 1 });
      await sink.open(await context());
      try {
        await sink.writeBatch(rows([1]));
        await sink.snapshotState(1);
        await sink.notifyCheckpointComplete(1);
        await grant(`REVOKE INSERT ON "${schema}"."t" FROM "${role}"`);
        const error = await (async () => {
          try {
            await sink.writeBatch(rows([2]));
            await sink.snapshotState(2);
            await sink.notifyCheckpointComplete(2);
            return undefined;
          } catch (e) {
            return e;
          }
        })();
        expectRefused(error, sink, "table", `INSERT on ${schema}.t`);
      } finally {
        await sink.close();
      }
    },
  );

  it.each(SINKS)("%s: a job whose role may not insert fails at once, with no restart", async (kind) => {
    const { schema, role, url } = await setUp("job");
    await grant(`GRANT SELECT ON "${schema}"."t" TO "${role}"`);
    await grant(`GRANT CREATE ON SCHEMA "${schema}" TO "${role}"`);
    const job = new StreamJob({
      name: "pg-privileges",
      parallelism: 1,
      checkpoint: { storage: await mkdtemp(join(tmpdir(), "exactly-pg-priv-job-")), intervalMs: 50 },
      // Short delays: the old behaviour (ten restarts) would end quickly too.
      restart: { initialDelayMs: 10, maxDelayMs: 20 },
      logger: silentLogger,
    });
    job
      .fromSource(new GeneratorSource({ count: 200, splits: 1, generate: (i) => ({ id: i, v: `v${i}` }) }))
      .sinkTo(factoryOf(kind, url, schema), { name: "pg-out" });
    const restarts: unknown[] = [];
    const error = await job.execute({ onRestart: (info) => restarts.push(info.error) }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(configurationError(error), String(error)).toBeInstanceOf(ConfigurationError);
    expect(configurationError(error)?.message).toContain(`INSERT on ${schema}.t`);
    expect(restarts.map(String)).toEqual([]);
  });
});
