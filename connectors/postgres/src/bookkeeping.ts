/**
 * The sinks' own tables, created if missing in a schema the user picks (default: the
 * target table's):
 *
 * - `exactly_prepared_markers (gid, sink, subtask, checkpoint)`: the two-phase sink writes a
 *   row inside each prepared transaction, so after a crash a `COMMIT PREPARED` that finds no
 *   such transaction (42704) is settled by the server: committed if the marker is there,
 *   lost if not.
 * - `exactly_progress (sink, subtask, checkpoint)`: the write-ahead sink's last committed
 *   checkpoint per subtask, updated in the same transaction as the rows.
 * - `exactly_fences (sink, subtask, epoch)`: in a sharded job only, the epoch of the newest
 *   owner of each subtask index (`fences.ts`).
 */
import type { PostgresConnection } from "./postgres-connection.ts";
import { qualifiedName, quoteIdentifier } from "./sql.ts";

export const MARKER_TABLE = "exactly_prepared_markers";
export const PROGRESS_TABLE = "exactly_progress";
/** A sharded job's fences (`fences.ts`), one row per (sink, subtask) holding the newest owner's epoch. */
export const FENCE_TABLE = "exactly_fences";

/** Serializes the creation of these tables across subtasks and jobs (CREATE … IF NOT EXISTS races on the catalog). */
const DDL_LOCK = "SELECT pg_advisory_xact_lock(hashtext('exactly:bookkeeping-ddl'))";

async function exists(connection: PostgresConnection, kind: "schema" | "table", name: string): Promise<boolean> {
  const { rows } = await connection.query(
    kind === "schema"
      ? "SELECT to_regnamespace($1) IS NOT NULL AS found"
      : "SELECT to_regclass($1) IS NOT NULL AS found",
    [name],
  );
  return rows[0]?.found === true;
}

/**
 * Creates a sink's own table (and its schema) if missing; checks first, so a user without
 * CREATE rights can use tables made for them.
 */
export async function ensureTable(
  connection: PostgresConnection,
  schema: string,
  table: string,
  definition: string,
): Promise<void> {
  if (await exists(connection, "table", table)) return;
  await connection.query("BEGIN");
  try {
    await connection.query(DDL_LOCK);
    if (!(await exists(connection, "schema", quoteIdentifier(schema)))) {
      await connection.query(`CREATE SCHEMA ${quoteIdentifier(schema)}`);
    }
    await connection.query(`CREATE TABLE IF NOT EXISTS ${table} (${definition})`);
    await connection.query("COMMIT");
  } catch (error) {
    await connection.query("ROLLBACK").catch(() => {});
    throw error;
  }
}

export class Bookkeeping {
  readonly schema: string;
  readonly markers: string;
  readonly progress: string;

  constructor(schema: string) {
    this.schema = schema;
    this.markers = qualifiedName(schema, MARKER_TABLE);
    this.progress = qualifiedName(schema, PROGRESS_TABLE);
  }

  ensureMarkers(connection: PostgresConnection): Promise<void> {
    return ensureTable(
      connection,
      this.schema,
      this.markers,
      "gid text PRIMARY KEY, sink text NOT NULL, subtask integer NOT NULL, checkpoint bigint NOT NULL, prepared_at timestamptz NOT NULL DEFAULT now()",
    );
  }

  ensureProgress(connection: PostgresConnection): Promise<void> {
    return ensureTable(
      connection,
      this.schema,
      this.progress,
      "sink text NOT NULL, subtask integer NOT NULL, checkpoint bigint NOT NULL, committed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (sink, subtask)",
    );
  }

  /** Inside a prepared transaction: the marker that settles it after a crash. */
  insertMarker(connection: PostgresConnection, gid: string, sink: string, subtask: number, checkpoint: number) {
    return connection.query(`INSERT INTO ${this.markers} (gid, sink, subtask, checkpoint) VALUES ($1, $2, $3, $4)`, [
      gid,
      sink,
      subtask,
      checkpoint,
    ]);
  }

  /** Inside a prepared transaction: markers no restorable checkpoint can ask about any more (see the two-phase sink). */
  deleteMarkersBefore(connection: PostgresConnection, sink: string, subtask: number, checkpoint: number) {
    return connection.query(`DELETE FROM ${this.markers} WHERE sink = $1 AND subtask = $2 AND checkpoint < $3`, [
      sink,
      subtask,
      checkpoint,
    ]);
  }

  async hasMarker(connection: PostgresConnection, gid: string): Promise<boolean> {
    const { rows } = await connection.query(`SELECT 1 FROM ${this.markers} WHERE gid = $1`, [gid]);
    return rows.length > 0;
  }

  /** The write-ahead sink's last committed checkpoint of (sink, subtask); `lock` takes the row for the transaction. */
  async committedCheckpoint(connection: PostgresConnection, sink: string, subtask: number, lock = false) {
    const { rows } = await connection.query(
      `SELECT checkpoint FROM ${this.progress} WHERE sink = $1 AND subtask = $2${lock ? " FOR UPDATE" : ""}`,
      [sink, subtask],
    );
    return rows.length === 0 ? 0 : Number(rows[0]?.checkpoint);
  }

  advanceProgress(connection: PostgresConnection, sink: string, subtask: number, checkpoint: number) {
    return connection.query(
      `INSERT INTO ${this.progress} (sink, subtask, checkpoint) VALUES ($1, $2, $3)
       ON CONFLICT (sink, subtask) DO UPDATE SET checkpoint = EXCLUDED.checkpoint, committed_at = now()`,
      [sink, subtask, checkpoint],
    );
  }

  /**
   * On a fresh start (no checkpoint restored), checkpoint ids begin at 1 again: the rows a
   * previous run of the same sink name left for the subtask indexes this subtask owns would
   * make new checkpoints look committed. Forgets them; returns how many.
   */
  async forget(
    connection: PostgresConnection,
    table: "markers" | "progress",
    sink: string,
    owns: (subtask: number) => boolean,
  ): Promise<number> {
    const target = table === "markers" ? this.markers : this.progress;
    const { rows } = await connection.query(`SELECT DISTINCT subtask FROM ${target} WHERE sink = $1`, [sink]);
    const owned = rows.map((r) => Number(r.subtask)).filter(owns);
    if (owned.length === 0) return 0;
    const { rowCount } = await connection.query(`DELETE FROM ${target} WHERE sink = $1 AND subtask = ANY($2::int[])`, [
      sink,
      owned,
    ]);
    return rowCount;
  }
}
