// Postgres is healthy when it answers a query and can PREPARE TRANSACTION (a server with
// max_prepared_transactions = 0 answers everything else and fails the two-phase-commit sink).

import pg from "pg";
import type { PostgresEndpoint } from "./endpoint.ts";

export async function probePostgres(endpoint: PostgresEndpoint): Promise<string> {
  const client = new pg.Client({ connectionString: endpoint.url, connectionTimeoutMillis: 3_000 });
  await client.connect();
  try {
    const result = await client.query<{ version: string; max: string }>(
      "SELECT current_setting('server_version') AS version, current_setting('max_prepared_transactions') AS max",
    );
    const row = result.rows[0];
    if (!row) throw new Error("no answer to a settings query");
    if (Number(row.max) <= 0) {
      throw new Error("max_prepared_transactions = 0: the server cannot PREPARE TRANSACTION");
    }
    return `PostgreSQL ${row.version}, max_prepared_transactions=${row.max}`;
  } finally {
    await client.end();
  }
}
