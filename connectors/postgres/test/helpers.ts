/** What the Postgres tests share: a client on the test server, fresh tables, what a reader sees. */
import { createHash, randomUUID } from "node:crypto";
import pg from "pg";

export async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** A table name of at most 63 bytes (Postgres cuts longer ones), distinct per seed. */
export function tableNameFor(seed: string = randomUUID()): string {
  return `t_${createHash("sha256").update(seed).digest("hex").slice(0, 20)}`;
}

/** The mapping of the records' table's columns (see {@link createRecordsTable}). */
export const RECORD_COLUMNS = [
  { name: "id", type: "bigint" },
  { name: "key", type: "text" },
  { name: "version", type: "integer" },
  { name: "payload", type: "text" },
] as const;

/** The records' table: id, key, version, payload; unique on id for the upsert tests. */
export async function createRecordsTable(url: string, table: string, options: { uniqueId?: boolean } = {}) {
  await withClient(url, (c) =>
    c.query(
      `CREATE TABLE "${table}" (id bigint ${options.uniqueId ? "PRIMARY KEY" : "NOT NULL"}, key text NOT NULL, version integer NOT NULL, payload text)`,
    ),
  );
}

export async function dropTable(url: string, table: string) {
  await withClient(url, (c) => c.query(`DROP TABLE IF EXISTS "${table}"`));
}

/**
 * Ids a fresh session sees committed, as one text value rather than a row each: the
 * conformance suite reads tables of up to 50,000 rows every ~100 ms while a child runs, on
 * the same two cores as the child.
 */
export function committedIds(url: string, table: string): Promise<number[]> {
  return withClient(url, async (c) => {
    const { rows } = await c.query<{ ids: string | null }>(`SELECT string_agg(id::text, ',') AS ids FROM "${table}"`);
    const ids = rows[0]?.ids;
    return ids ? ids.split(",").map(Number) : [];
  });
}

/** Prepared transactions whose id starts with `prefix:` in the current database. */
export function preparedUnder(url: string, prefix: string): Promise<string[]> {
  return withClient(url, async (c) =>
    (
      await c.query(
        "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, $1) ORDER BY gid",
        [`${prefix}:`],
      )
    ).rows.map((r) => String(r.gid)),
  );
}

/** Rolls back every prepared transaction under `prefix:` (cleanup after a test). */
export async function rollbackPreparedUnder(url: string, prefix: string) {
  for (const gid of await preparedUnder(url, prefix)) {
    await withClient(url, (c) => c.query(`ROLLBACK PREPARED '${gid.replaceAll("'", "''")}'`)).catch(() => {});
  }
}
