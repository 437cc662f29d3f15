/**
 * `exactly demo --sink postgres`: the demo job's records appended (COPY, no unique key, so a
 * duplicate would show) into a table the demo creates fresh, then read back and counted.
 * `@exactly/postgres` is not a dependency of the CLI: it is loaded when such a demo starts,
 * from wherever the CLI is installed, so a file-only user gets no Postgres client.
 */
import { ConfigurationError, DeliveryGuarantee } from "@exactly/core";
import type * as PostgresConnector from "@exactly/postgres";
import { loadConnector } from "../../load-connector.ts";
import { addressOf, serverAt } from "../../server-check.ts";
import type { DemoRecord } from "../demo-record.ts";
import { RecordTally } from "../verify-output.ts";
import type { DemoTarget } from "./demo-target.ts";

export const POSTGRES_CONNECTOR = "@exactly/postgres";
/** The demo sink's name: the prefix of its prepared transactions. */
export const DEMO_SINK_NAME = "exactly-demo";
/** Marks a table the demo created, so a later demo may drop it; any other table is refused. */
const OWNED = "created by exactly demo";

export type PostgresConnectorModule = typeof PostgresConnector;

/** Imports the Postgres connector, or fails with the command that installs it. */
export function loadPostgresConnector(specifier: string = POSTGRES_CONNECTOR): Promise<PostgresConnectorModule> {
  return loadConnector<PostgresConnectorModule>(specifier, "--sink postgres");
}

export interface PostgresDemoSettings {
  readonly url: string;
  readonly table: string;
  readonly exactlyOnce: "two-phase" | "write-ahead";
}

/** `--sink postgres`: the server, the table, and how exactly-once is kept (two-phase or write-ahead). */
export const postgresTarget: DemoTarget<PostgresDemoSettings> = {
  sink: "postgres",
  flags: [
    { flags: "--pg-url <url>", description: "the Postgres server (default: $EXACTLY_PG_URL)" },
    { flags: "--table <name>", description: "the table the demo creates fresh and appends to (default: exactly_demo)" },
    {
      flags: "--pg-sink <kind>",
      description: "how exactly-once is kept: two-phase or write-ahead (default: two-phase)",
    },
  ],
  settings(options) {
    const url = options.pgUrl ?? process.env.EXACTLY_PG_URL;
    if (!url) throw new ConfigurationError("--pg-url", "give the Postgres connection string (or set EXACTLY_PG_URL)");
    const exactlyOnce = options.pgSink ?? "two-phase";
    if (exactlyOnce !== "two-phase" && exactlyOnce !== "write-ahead") {
      throw new ConfigurationError("--pg-sink", `must be two-phase or write-ahead, got ${exactlyOnce}`);
    }
    return { url, table: options.table ?? "exactly_demo", exactlyOnce };
  },
  identity: (target) => ({ table: target.table, pgSink: target.exactlyOnce }),
  server: (target) => serverAt("--pg-url (or $EXACTLY_PG_URL)", "the Postgres server", addressOf(target.url, 5432)),
  prepare: prepareDemoTable,
  async sinks(target, run) {
    const { postgresSink } = await loadPostgresConnector();
    return {
      "demo-postgres": postgresSink<DemoRecord>({
        connection: target.url,
        guarantee: run.guarantee,
        exactlyOnce: target.exactlyOnce,
        name: DEMO_SINK_NAME,
        table: {
          table: target.table,
          columns: [
            { name: "id", type: "bigint" },
            { name: "key", type: "integer" },
            { name: "seq", type: "integer" },
          ],
          write: "append",
        },
        // At least once, rows go out in small committed write-outs, as a plain JDBC sink's batches
        // do: a kill then replays rows already committed, and the demo shows the duplicates.
        ...(run.guarantee === DeliveryGuarantee.AT_LEAST_ONCE ? { flushRows: 1000 } : {}),
      }),
    };
  },
  async verify(target, run) {
    const { check, preparedLeft } = await verifyDemoTable(target, run.records);
    return {
      check,
      leftOpen: preparedLeft,
      fields: {
        table: target.table,
        preparedLeft,
        // Only an exactly-once demo has a choice of sink class.
        ...(run.guarantee === DeliveryGuarantee.EXACTLY_ONCE ? { pgSink: target.exactlyOnce } : {}),
      },
    };
  },
  rows: (s) => [
    ["output", `table ${s.table} (${s.pgSink ? `${s.pgSink} sink` : "at-least-once sink"})`],
    ["prepared left", String(s.preparedLeft)],
    ["checkpoints in", s.out],
  ],
};

/** Creates the demo table fresh: drops one an earlier demo created, refuses any other table of that name. */
async function prepareDemoTable(target: PostgresDemoSettings): Promise<void> {
  const pg = await loadPostgresConnector();
  const connection = await pg.connectPostgres(target.url, "demo");
  try {
    const table = pg.qualifiedName("public", target.table);
    const { rows } = await connection.query(
      "SELECT to_regclass($1) IS NOT NULL AS found, obj_description(to_regclass($1), 'pg_class') AS comment",
      [table],
    );
    if (rows[0]?.found === true) {
      if (rows[0]?.comment !== OWNED) {
        throw new ConfigurationError(
          "--table",
          `a table ${target.table} exists that the demo did not create; give another --table`,
        );
      }
      await connection.query(`DROP TABLE ${table}`);
    }
    await connection.query(`CREATE TABLE ${table} (id bigint NOT NULL, key integer NOT NULL, seq integer NOT NULL)`);
    await connection.query(`COMMENT ON TABLE ${table} IS '${OWNED}'`);
  } finally {
    await connection.close();
  }
}

/** Reads the table back, as a fresh session sees it, and counts the demo sink's prepared transactions left. */
async function verifyDemoTable(target: PostgresDemoSettings, records: number) {
  const pg = await loadPostgresConnector();
  const connection = await pg.connectPostgres(target.url, "demo");
  try {
    const tally = new RecordTally(records);
    const { rows } = await connection.query(`SELECT id, key, seq FROM ${pg.qualifiedName("public", target.table)}`);
    for (const row of rows) tally.add({ id: Number(row.id), key: Number(row.key), seq: Number(row.seq) });
    const prepared = await pg.listPrepared(connection, DEMO_SINK_NAME);
    return { check: tally.result(0), preparedLeft: prepared.length };
  } finally {
    await connection.close();
  }
}
