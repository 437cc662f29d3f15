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
 * - `exactly_records (name, version, value)`: the shards' lease records
 *   (`postgres-conditional-record.ts`), under any name the user gives.
 *
 * No sink may write records into any of them, in any schema (I8): rows there would pass for
 * markers, progress, fences or leases. A sink recognises them by what they are, not by name:
 * each carries a comment saying which it is (`COMMENT ON TABLE`, set when it is created), and
 * tables an earlier version created without one have exactly the columns and primary key
 * below, which have not changed since the first version.
 */
import { ConfigurationError } from "@exactly/core";
import type { PostgresConnection } from "./postgres-connection.ts";
import { type NeededPrivilege, requirePrivileges, requireSchema } from "./privileges.ts";
import { qualifiedName, quoteIdentifier, quoteLiteral, readableIdentifier, readableName } from "./sql.ts";

export const MARKER_TABLE = "exactly_prepared_markers";
export const PROGRESS_TABLE = "exactly_progress";
/** A sharded job's fences (`fences.ts`), one row per (sink, subtask) holding the newest owner's epoch. */
export const FENCE_TABLE = "exactly_fences";
/** The shards' lease records (`postgres-conditional-record.ts`), its default name. */
export const RECORD_TABLE = "exactly_records";

/** One kind of the sinks' own tables. */
export interface OwnTable {
  readonly kind: "markers" | "progress" | "fences" | "records";
  /** Its name (the default name, for lease records). */
  readonly name: string;
  /** What it is, for an error that refuses it as a target. */
  readonly description: string;
  readonly definition: string;
  /** Its columns and their types as `format_type` gives them, as every version created them. */
  readonly columns: Readonly<Record<string, string>>;
  readonly primaryKey: readonly string[];
  /** What the sinks' statements on it take. */
  readonly privileges: readonly NeededPrivilege[];
}

const TIMESTAMPTZ = "timestamp with time zone";

export const OWN_TABLES: Readonly<Record<OwnTable["kind"], OwnTable>> = {
  markers: {
    kind: "markers",
    name: MARKER_TABLE,
    description: "prepared-transaction marker table (two-phase sinks)",
    definition:
      "gid text PRIMARY KEY, sink text NOT NULL, subtask integer NOT NULL, checkpoint bigint NOT NULL, prepared_at timestamptz NOT NULL DEFAULT now()",
    columns: { gid: "text", sink: "text", subtask: "integer", checkpoint: "bigint", prepared_at: TIMESTAMPTZ },
    primaryKey: ["gid"],
    privileges: [
      { privilege: "SELECT", columns: ["gid", "sink", "subtask", "checkpoint"] },
      { privilege: "INSERT", columns: ["gid", "sink", "subtask", "checkpoint"] },
      { privilege: "DELETE" },
    ],
  },
  progress: {
    kind: "progress",
    name: PROGRESS_TABLE,
    description: "progress table (write-ahead sinks' committed checkpoints)",
    definition:
      "sink text NOT NULL, subtask integer NOT NULL, checkpoint bigint NOT NULL, committed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (sink, subtask)",
    columns: { sink: "text", subtask: "integer", checkpoint: "bigint", committed_at: TIMESTAMPTZ },
    primaryKey: ["sink", "subtask"],
    privileges: [
      { privilege: "SELECT", columns: ["sink", "subtask", "checkpoint"] },
      { privilege: "INSERT", columns: ["sink", "subtask", "checkpoint"] },
      // Also what `SELECT … FOR UPDATE` takes.
      { privilege: "UPDATE", columns: ["checkpoint", "committed_at"] },
      { privilege: "DELETE" },
    ],
  },
  fences: {
    kind: "fences",
    name: FENCE_TABLE,
    description: "fence table (sharded sinks' owner epochs)",
    definition:
      "sink text NOT NULL, subtask integer NOT NULL, epoch bigint NOT NULL, raised_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (sink, subtask)",
    columns: { sink: "text", subtask: "integer", epoch: "bigint", raised_at: TIMESTAMPTZ },
    primaryKey: ["sink", "subtask"],
    privileges: [
      { privilege: "SELECT", columns: ["sink", "subtask", "epoch"] },
      { privilege: "INSERT", columns: ["sink", "subtask", "epoch"] },
      // Also what `SELECT … FOR SHARE` takes.
      { privilege: "UPDATE", columns: ["epoch", "raised_at"] },
    ],
  },
  records: {
    kind: "records",
    name: RECORD_TABLE,
    description: "lease record table (shards' conditional records)",
    definition: "name text PRIMARY KEY, version bigint NOT NULL, value jsonb NOT NULL",
    columns: { name: "text", version: "bigint", value: "jsonb" },
    primaryKey: ["name"],
    privileges: [
      { privilege: "SELECT", columns: ["name", "version", "value"] },
      { privilege: "INSERT", columns: ["name", "version", "value"] },
      { privilege: "UPDATE", columns: ["version", "value"] },
    ],
  },
};

/** The comment each of the sinks' own tables carries, which says what it is. */
function ownTableComment(table: OwnTable): string {
  return `exactly:${table.kind}: the ${table.description} of @exactly/postgres; no sink writes records here`;
}

const OWN_COMMENT = /^exactly:(markers|progress|fences|records):/;

/** Serializes the creation of these tables across subtasks and jobs (CREATE … IF NOT EXISTS races on the catalog). */
const DDL_LOCK = "SELECT pg_advisory_xact_lock(hashtext('exactly:bookkeeping-ddl'))";

async function tableExists(connection: PostgresConnection, qualified: string): Promise<boolean> {
  const { rows } = await connection.query("SELECT to_regclass($1) IS NOT NULL AS found", [qualified]);
  return rows[0]?.found === true;
}

export interface TableToEnsure {
  readonly schema: string;
  readonly table: string;
  readonly definition: string;
  /** `COMMENT ON TABLE` once created. */
  readonly comment?: string;
  /** The setting that names the schema or table, for an error about the role's rights. */
  readonly setting: string;
}

/**
 * Creates a table (and its schema) if missing; checks first, so a role without CREATE rights
 * can use tables made for it. A role that may not use the schema, or would have to create
 * and may not, is refused naming `setting` and the privilege.
 */
export async function ensureTable(connection: PostgresConnection, spec: TableToEnsure): Promise<void> {
  const table = qualifiedName(spec.schema, spec.table);
  const options = { readableSchema: readableIdentifier(spec.schema) };
  if ((await requireSchema(connection, spec.setting, spec.schema, options)) && (await tableExists(connection, table)))
    return;
  await requireSchema(connection, spec.setting, spec.schema, { ...options, create: true });
  await connection.query("BEGIN");
  try {
    await connection.query(DDL_LOCK);
    // Read from the catalog tables under this statement's snapshot: to_regclass's catalog
    // cache need not have seen yet what another session committed while this one waited for
    // the lock. A table created meanwhile by another subtask holds the comment already.
    const { rows } = await connection.query(
      `SELECT n.oid IS NOT NULL AS schema_found,
              EXISTS (SELECT 1 FROM pg_class c WHERE c.relnamespace = n.oid AND c.relname = $2) AS table_found
         FROM (SELECT 1) AS one LEFT JOIN pg_namespace n ON n.nspname = $1`,
      [spec.schema, spec.table],
    );
    if (rows[0]?.table_found !== true) {
      // Not CREATE SCHEMA IF NOT EXISTS: that asks for CREATE on the database even when the schema exists.
      if (rows[0]?.schema_found !== true) await connection.query(`CREATE SCHEMA ${quoteIdentifier(spec.schema)}`);
      await connection.query(`CREATE TABLE ${table} (${spec.definition})`);
      if (spec.comment) await connection.query(`COMMENT ON TABLE ${table} IS ${quoteLiteral(spec.comment)}`);
    }
    await connection.query("COMMIT");
  } catch (error) {
    await connection.query("ROLLBACK").catch(() => {});
    throw error;
  }
}

/**
 * One of the sinks' own tables in `schema` (under `name`, for lease records), created if
 * missing, with the comment that says what it is; refuses, naming `setting`, if the role
 * lacks a privilege the sinks' statements on it take.
 */
export async function ensureOwnTable(
  connection: PostgresConnection,
  own: OwnTable,
  schema: string,
  setting: string,
  name = own.name,
): Promise<void> {
  await ensureTable(connection, {
    schema,
    table: name,
    definition: own.definition,
    comment: ownTableComment(own),
    setting,
  });
  await requirePrivileges(connection, {
    setting,
    table: qualifiedName(schema, name),
    readable: readableName(schema, name),
    purpose: "keep its bookkeeping",
    privileges: own.privileges,
  });
}

/** Which of the sinks' own tables a table is, by its comment or its columns and key. */
function recognise(
  comment: unknown,
  columns: readonly string[],
  key: readonly string[],
): { own: OwnTable; by: string } | undefined {
  const marked = typeof comment === "string" ? OWN_COMMENT.exec(comment) : null;
  if (marked) return { own: OWN_TABLES[marked[1] as OwnTable["kind"]], by: "its comment" };
  const shape = [...columns].sort().join(",");
  const primary = [...key].sort().join(",");
  for (const own of Object.values(OWN_TABLES)) {
    const ownShape = Object.entries(own.columns)
      .map(([column, type]) => `${column} ${type}`)
      .sort()
      .join(",");
    if (shape === ownShape && primary === [...own.primaryKey].sort().join(","))
      return { own, by: "its columns and primary key, as the sinks create it" };
  }
  return undefined;
}

/**
 * Refuses, naming `setting`, a table (`"schema"."table"`) that is one of the sinks' own tables
 * in any schema, or inherits from one (its rows show in the parent): records written there
 * would pass for the sinks' bookkeeping (I8).
 */
export async function refuseOwnTable(connection: PostgresConnection, setting: string, table: string): Promise<void> {
  const { rows } = await connection.query(
    `WITH RECURSIVE lineage(oid, depth) AS (
       SELECT to_regclass($1)::oid, 0
       UNION ALL
       SELECT i.inhparent, l.depth + 1 FROM pg_inherits i JOIN lineage l ON i.inhrelid = l.oid WHERE l.depth < 32
     )
     SELECT n.nspname::text AS schema, c.relname::text AS name, l.depth, obj_description(c.oid, 'pg_class') AS comment,
            ARRAY(SELECT a.attname::text || ' ' || format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
                   WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns,
            ARRAY(SELECT a.attname::text FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
                   WHERE i.indrelid = c.oid AND i.indisprimary) AS key
       FROM lineage l JOIN pg_class c ON c.oid = l.oid JOIN pg_namespace n ON n.oid = c.relnamespace
      ORDER BY l.depth`,
    [table],
  );
  const readable = (row: Record<string, unknown> | undefined) => readableName(String(row?.schema), String(row?.name));
  for (const row of rows) {
    const found = recognise(row.comment, row.columns as string[], row.key as string[]);
    if (!found) continue;
    const what = `exactly's ${found.own.description}, recognised by ${found.by}`;
    throw new ConfigurationError(
      setting,
      row === rows[0]
        ? `${readable(row)} is ${what}: records written there would pass for the sinks' own bookkeeping. Map the sink onto a table of your own`
        : `${readable(rows[0])} inherits from ${readable(row)}, ${what}: its rows show there and would pass for the sinks' own bookkeeping. Map the sink onto a table of your own`,
    );
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
    return ensureOwnTable(connection, OWN_TABLES.markers, this.schema, "bookkeepingSchema");
  }

  ensureProgress(connection: PostgresConnection): Promise<void> {
    return ensureOwnTable(connection, OWN_TABLES.progress, this.schema, "bookkeepingSchema");
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
