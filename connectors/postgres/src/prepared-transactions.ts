/**
 * Prepared transactions by name: `<sink>:<subtask>:<checkpoint>`. The name is the sink
 * name (validated: letters, digits, `_ . -`), so a sink finds its own in
 * `pg_prepared_xacts` and never another sink's: the rest after `<sink>:` must be exactly two
 * numbers.
 */
import { type PostgresConnection, ServerError, SQLSTATE } from "./postgres-connection.ts";
import { quoteLiteral } from "./sql.ts";

export interface PreparedName {
  readonly gid: string;
  readonly subtask: number;
  readonly checkpointId: number;
}

export function gidOf(sink: string, subtask: number, checkpointId: number): string {
  return `${sink}:${subtask}:${checkpointId}`;
}

export function parseGid(sink: string, gid: string): PreparedName | undefined {
  if (!gid.startsWith(`${sink}:`)) return undefined;
  const match = /^(\d+):(\d+)$/.exec(gid.slice(sink.length + 1));
  if (!match) return undefined;
  return { gid, subtask: Number(match[1]), checkpointId: Number(match[2]) };
}

/** This sink's prepared transactions in the current database. */
export async function listPrepared(connection: PostgresConnection, sink: string): Promise<PreparedName[]> {
  const { rows } = await connection.query(
    "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, $1)",
    [`${sink}:`],
  );
  return rows.flatMap((r) => parseGid(sink, String(r.gid)) ?? []);
}

/** Databases other than this one holding prepared transactions under this sink's name (gids are unique server-wide). */
export async function otherDatabasesUsing(connection: PostgresConnection, sink: string): Promise<string[]> {
  const { rows } = await connection.query(
    "SELECT DISTINCT database FROM pg_prepared_xacts WHERE database <> current_database() AND starts_with(gid, $1)",
    [`${sink}:`],
  );
  return rows.map((r) => String(r.database));
}

export function prepare(connection: PostgresConnection, gid: string) {
  return connection.query(`PREPARE TRANSACTION ${quoteLiteral(gid)}`);
}

/** `COMMIT PREPARED`; false when there is no such prepared transaction (42704): committed or rolled back before. */
export async function commitPrepared(connection: PostgresConnection, gid: string): Promise<boolean> {
  try {
    await connection.query(`COMMIT PREPARED ${quoteLiteral(gid)}`);
    return true;
  } catch (error) {
    if (error instanceof ServerError && error.sqlstate === SQLSTATE.UNDEFINED_OBJECT) return false;
    throw error;
  }
}

/** `ROLLBACK PREPARED`; a transaction that is already gone is fine. */
export async function rollbackPrepared(connection: PostgresConnection, gid: string): Promise<void> {
  try {
    await connection.query(`ROLLBACK PREPARED ${quoteLiteral(gid)}`);
  } catch (error) {
    if (error instanceof ServerError && error.sqlstate === SQLSTATE.UNDEFINED_OBJECT) return;
    throw error;
  }
}
