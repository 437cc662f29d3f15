/**
 * `exactly demo --sink postgres`: the demo job's records appended (COPY, no unique key, so a
 * duplicate would show) into a table the demo creates fresh, then read back and counted.
 * `@exactly/postgres` is not a dependency of the CLI: it is loaded when such a demo starts,
 * from wherever the CLI is installed, so a file-only user gets no Postgres client.
 */
import type * as PostgresConnector from "@exactly/postgres";
import { loadConnector } from "../load-connector.ts";
import type { OutputCheck } from "./verify-output.ts";
import { RecordTally } from "./verify-output.ts";

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

export interface PostgresDemoSink {
  readonly url: string;
  readonly table: string;
  readonly exactlyOnce: "two-phase" | "write-ahead";
}

/** Creates the demo table fresh: drops one an earlier demo created, refuses any other table of that name. */
export async function prepareDemoTable(target: PostgresDemoSink): Promise<void> {
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
        throw new Error(
          `--table ${target.table}: a table of that name exists and the demo did not create it; give another --table`,
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
export async function verifyDemoTable(
  target: PostgresDemoSink,
  records: number,
): Promise<OutputCheck & { preparedLeft: number }> {
  const pg = await loadPostgresConnector();
  const connection = await pg.connectPostgres(target.url, "demo");
  try {
    const tally = new RecordTally(records);
    const { rows } = await connection.query(`SELECT id, key, seq FROM ${pg.qualifiedName("public", target.table)}`);
    for (const row of rows) tally.add({ id: Number(row.id), key: Number(row.key), seq: Number(row.seq) });
    const prepared = await pg.listPrepared(connection, DEMO_SINK_NAME);
    return { ...tally.result(0), preparedLeft: prepared.length };
  } finally {
    await connection.close();
  }
}
