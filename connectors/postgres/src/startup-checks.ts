/**
 * What the sinks check against the server when they open, so a setting that would lose data
 * or cannot work refuses to start, naming it (I7, docs/design.md §3), instead of failing at the
 * first checkpoint or, worse, silently.
 */
import { createHash } from "node:crypto";
import { ConfigurationError } from "@exactly/core";
import { refuseOwnTable } from "./bookkeeping.ts";
import type { PostgresConnection } from "./postgres-connection.ts";
import { otherDatabasesUsing } from "./prepared-transactions.ts";
import { mappingNeeds, requirePrivileges, requireSchema } from "./privileges.ts";
import { readableIdentifier } from "./sql.ts";
import type { CompiledMapping } from "./table-mapping.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The table exists, is none of the sinks' own tables (I8), has every mapped column, for
 * upserts a unique index on exactly the key, and the role may write it.
 */
export async function checkTable<T>(connection: PostgresConnection, mapping: CompiledMapping<T>): Promise<void> {
  const table = mapping.qualifiedTable;
  // Before any lookup by name: one in a schema the role may not use fails with 42501.
  await requireSchema(connection, "table", mapping.schema, { readableSchema: readableIdentifier(mapping.schema) });
  const { rows: found } = await connection.query(
    "SELECT to_regclass($1) IS NOT NULL AS found, current_database() AS database",
    [table],
  );
  if (found[0]?.found !== true) {
    throw new ConfigurationError("table.table", `table ${table} does not exist in database ${found[0]?.database}`);
  }
  await refuseOwnTable(connection, "table", table);
  const { rows: columns } = await connection.query(
    "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped",
    [table],
  );
  const present = new Set(columns.map((c) => String(c.attname)));
  for (const column of mapping.columns) {
    if (!present.has(column.name)) {
      throw new ConfigurationError("table.columns", `column ${JSON.stringify(column.name)} does not exist in ${table}`);
    }
  }
  await requirePrivileges(connection, mappingNeeds(mapping));
  if (!mapping.keyColumns) return;
  const key = mapping.keyColumns.map((i) => mapping.columns[i]?.name as string);
  const { rows: indexes } = await connection.query(
    `SELECT array_agg(a.attname::text) AS columns FROM pg_index i
       JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
      WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
      GROUP BY i.indexrelid`,
    [table],
  );
  const wanted = [...key].sort().join("\u0000");
  const matches = indexes.some((r) => [...(r.columns as string[])].sort().join("\u0000") === wanted);
  if (!matches) {
    throw new ConfigurationError(
      "table.write.upsertOn",
      `${table} has no unique index or constraint on exactly (${key.join(", ")}): ON CONFLICT needs one`,
    );
  }
}

/**
 * `max_prepared_transactions` must allow every subtask its pending checkpoints; 0 (the
 * server's default) disables PREPARE TRANSACTION altogether.
 */
export async function checkPreparedTransactions(
  connection: PostgresConnection,
  parallelism: number,
  pendingPerSubtask: number,
): Promise<void> {
  const { rows } = await connection.query("SELECT current_setting('max_prepared_transactions')::int AS n");
  const allowed = Number(rows[0]?.n);
  const needed = parallelism * pendingPerSubtask;
  if (allowed === 0) {
    throw new ConfigurationError(
      "max_prepared_transactions",
      `is 0 on the server, which disables PREPARE TRANSACTION: set it to at least ${needed} (parallelism ${parallelism} × ${pendingPerSubtask} pending checkpoints) and restart Postgres, or use PostgresWriteAheadSink, which needs no server setting`,
    );
  }
  if (allowed < needed) {
    throw new ConfigurationError(
      "max_prepared_transactions",
      `is ${allowed} on the server, fewer than parallelism ${parallelism} × ${pendingPerSubtask} pending checkpoints (maxPendingCheckpoints) = ${needed}: raise it and restart Postgres, or use PostgresWriteAheadSink`,
    );
  }
}

/** Prepared-transaction ids are unique across the server: a sink name in use in another database would collide. */
export async function checkNameUnusedElsewhere(connection: PostgresConnection, sink: string): Promise<void> {
  const others = await otherDatabasesUsing(connection, sink);
  if (others.length > 0) {
    throw new ConfigurationError(
      "name",
      `prepared transactions of a sink named ${JSON.stringify(sink)} exist in database(s) ${others.join(", ")}; their ids are unique across the server, so give this sink another name`,
    );
  }
}

/**
 * Takes a session-level advisory lock on (sink name, subtask) for as long as the connection
 * lives: two live sinks under one name in one database would roll back each other's work
 * as "lingering". A process that was just killed may hold it a moment longer (until the
 * server notices its connection is gone), so this waits up to `waitMs` before refusing.
 *
 * With `takeOver` (a sharded job, I9) a holder that is this sink's own session for the same
 * subtask (its `application_name`) is taken for an earlier owner of the shard, paused or cut
 * off, whose connection lives as long as it is paused: once `takeOver.check` passed (the
 * fences show no newer owner; it throws `ShardFencedError` otherwise) that session is ended
 * (`pg_terminate_backend`, which also ends the transaction it had open) and the lock taken.
 */
export async function lockSinkName(
  connection: PostgresConnection,
  sink: string,
  subtask: number,
  waitMs: number,
  takeOver?: { check: () => Promise<void>; ended: (pid: number) => void },
): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const { rows } = await connection.query("SELECT pg_try_advisory_lock(hashtext($1), $2) AS locked", [
      `exactly:${sink}`,
      subtask,
    ]);
    if (rows[0]?.locked === true) return;
    if (takeOver) {
      await takeOver.check();
      await endEarlierOwners(connection, sink, subtask, takeOver.ended);
    }
    if (Date.now() >= deadline) break;
    await sleep(200);
  }
  const { rows: holders } = await connection.query(
    `SELECT a.pid, a.application_name, a.client_addr, a.backend_start FROM pg_locks l JOIN pg_stat_activity a USING (pid)
      WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.objid = $2::int::oid
        AND l.classid = (hashtext($1)::bigint & 4294967295)::oid AND a.pid <> pg_backend_pid()`,
    [`exactly:${sink}`, subtask],
  );
  const who = holders
    .map(
      (h) =>
        `pid ${h.pid} (${h.application_name || "no application_name"}, from ${h.client_addr ?? "local"}, since ${h.backend_start})`,
    )
    .join("; ");
  throw new ConfigurationError(
    "name",
    `another session holds sink name ${JSON.stringify(sink)} for subtask ${subtask} in this database${who ? `: ${who}` : ""}; two sinks under one name would abort each other's transactions. Give one of them another \`name\`, or end the other session (pg_terminate_backend) if its process is gone`,
  );
}

/** Ends the sessions named as this sink's session for `subtask` (other than this one). */
export async function endEarlierOwners(
  connection: PostgresConnection,
  sink: string,
  subtask: number,
  ended: (pid: number) => void,
): Promise<void> {
  const name = sessionApplicationName(sink, subtask);
  const { rows } = await connection.query(
    "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid() AND datname = current_database()",
    [name],
  );
  for (const row of rows) {
    const pid = Number(row.pid);
    // Refused without the right (another role's session): the lock wait then ends as before.
    const { rows: result } = await connection
      .query("SELECT pg_terminate_backend($1) AS ended", [pid])
      .catch(() => ({ rows: [] as Record<string, unknown>[] }));
    if (result[0]?.ended === true) ended(pid);
  }
}

/** The `application_name` of the session that holds a sink's name lock for `subtask` (see pg/pg-connection.ts). */
export function sessionApplicationName(sink: string, subtask: number): string {
  return `exactly:${sessionPurpose(sink, subtask)}`;
}

/** Postgres keeps the first 63 bytes of an `application_name`. */
const APPLICATION_NAME_BYTES = 63;

/**
 * The purpose the session holding a sink's name lock for `subtask` connects with. Its
 * `application_name` is how a successor finds an earlier owner's session to end, so it must
 * arrive whole: a sink name (ASCII, up to 120 characters: validateSinkName) too long for 63
 * bytes goes in cut, with a hash of the whole name keeping it distinct.
 */
export function sessionPurpose(sink: string, subtask: number): string {
  const whole = `${sink}:${subtask}`;
  if (`exactly:${whole}`.length <= APPLICATION_NAME_BYTES) return whole;
  const hash = createHash("sha256").update(sink).digest("hex").slice(0, 12);
  const room = APPLICATION_NAME_BYTES - `exactly:~${hash}:${subtask}`.length;
  return `${sink.slice(0, room)}~${hash}:${subtask}`;
}
