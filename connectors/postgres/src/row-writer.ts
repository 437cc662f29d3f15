/**
 * Writes buffered rows on the bulk paths only: COPY FROM STDIN for appends, and for upserts
 * `INSERT … SELECT … FROM unnest($1::text[], …) ON CONFLICT …` in statements of many rows.
 * Never a statement per row. When the server refuses a statement, {@link explainRejection}
 * finds the row it refused, so the job's error names the record's source position, the
 * column and the SQLSTATE; with a dead-letter table, {@link writeRowsSettingAside} sets such
 * rows aside instead and writes the others.
 */
import { type ConfigurationError, type Logger, type RecordPosition, RecordWriteError } from "@exactly/core";
import { formatPosition } from "@exactly/core/internal";
import { parseCopyLine } from "./column-types.ts";
import { type DeadLetter, type DeadLetterTable, isRowFault } from "./dead-letters.ts";
import { RowRejectedError } from "./errors.ts";
import { isTransientPostgresError, type PostgresConnection, ServerError } from "./postgres-connection.ts";
import { INSUFFICIENT_PRIVILEGE, mappingNeeds, privilegeRefusal } from "./privileges.ts";
import { copyLines, type PendingRows, positionAt, rowCount } from "./row-buffer.ts";
import type { CompiledMapping } from "./table-mapping.ts";

/** Rows per upsert statement: one round trip carries this many. */
export const UPSERT_ROWS_PER_STATEMENT = 5000;

/**
 * The line (from 1) and column a COPY error's CONTEXT names. That is not always its first
 * line: a jsonb value's refusal starts with "JSON data, line 1: …", and the COPY line follows.
 */
const COPY_CONTEXT = /^COPY [^\n]+?, line (\d+)(?:, column ([^:\n]+))?/m;

function copyContext(error: ServerError): { line: number; column: string | undefined } | undefined {
  const match = error.where?.match(COPY_CONTEXT);
  return match ? { line: Number(match[1]), column: match[2] } : undefined;
}

/** How long the search for a refused row waits for a lock (a pending checkpoint's prepared rows). */
const DIAGNOSIS_LOCK_TIMEOUT = "5s";

async function writeSlice<T>(
  connection: PostgresConnection,
  mapping: CompiledMapping<T>,
  rows: PendingRows,
  from: number,
  to: number,
): Promise<void> {
  if (rows.kind === "copy") {
    await connection.copyFrom(
      mapping.copyStatement,
      from === 0 && to === rows.rows
        ? rows.pieces.map((piece) => piece.text)
        : [`${copyLines(rows, from, to).join("\n")}\n`],
    );
    return;
  }
  for (let at = from; at < to; at += UPSERT_ROWS_PER_STATEMENT) {
    const end = Math.min(to, at + UPSERT_ROWS_PER_STATEMENT);
    await connection.query(
      mapping.upsertStatement as string,
      rows.columns.map((column) => column.slice(at, end)),
    );
  }
}

/** Writes the rows inside the connection's open transaction. */
export async function writeRows<T>(
  connection: PostgresConnection,
  mapping: CompiledMapping<T>,
  rows: PendingRows,
): Promise<void> {
  if (rowCount(rows) === 0) return;
  await writeSlice(connection, mapping, rows, 0, rowCount(rows));
}

/** The dead letter of row `i`, which the server refused alone with `error`. */
function refusedRow<T>(mapping: CompiledMapping<T>, rows: PendingRows, i: number, error: ServerError): DeadLetter {
  const cells =
    rows.kind === "copy"
      ? parseCopyLine(copyLines(rows, i, i + 1)[0] as string)
      : rows.columns.map((c) => c[i] ?? null);
  const rowValues: Record<string, string | null> = {};
  mapping.columns.forEach((column, c) => {
    rowValues[column.name] = cells[c] ?? null;
  });
  const copyColumn = copyContext(error)?.column;
  return {
    position: positionAt(rows, i),
    sqlstate: error.sqlstate,
    column: error.column ?? copyColumn,
    error: error.detail ? `${error.message}: ${error.detail}` : error.message,
    rowValues,
  };
}

/**
 * Writes the rows inside the connection's open transaction, each slice under a savepoint:
 * a slice the server refuses for what a row holds ({@link isRowFault}) is undone alone and
 * halved until the refused rows stand alone; those become dead letters, every other row is
 * written, and what the transaction held before stays. Returns the dead letters, those the
 * buffer set aside first. Costs two round trips per call while no row is refused, and about
 * 2 × log2(rows) statements per refused row: for rare bad rows, not a filter.
 */
export async function writeRowsSettingAside<T>(
  connection: PostgresConnection,
  mapping: CompiledMapping<T>,
  rows: PendingRows,
): Promise<DeadLetter[]> {
  const letters = [...rows.setAside];
  const attempt = async (from: number, to: number): Promise<ServerError | undefined> => {
    await connection.query("SAVEPOINT exactly_rows");
    try {
      await writeSlice(connection, mapping, rows, from, to);
      await connection.query("RELEASE SAVEPOINT exactly_rows");
      return undefined;
    } catch (error) {
      if (!isRowFault(error)) throw error;
      await connection.query("ROLLBACK TO SAVEPOINT exactly_rows");
      await connection.query("RELEASE SAVEPOINT exactly_rows");
      return error;
    }
  };
  const isolate = async (from: number, to: number, error: ServerError): Promise<void> => {
    if (to - from === 1) {
      letters.push(refusedRow(mapping, rows, from, error));
      return;
    }
    const mid = from + Math.floor((to - from) / 2);
    for (const [a, b] of [
      [from, mid],
      [mid, to],
    ] as const) {
      const refused = await attempt(a, b);
      if (refused) await isolate(a, b, refused);
    }
  };
  const n = rowCount(rows);
  if (n > 0) {
    const refused = await attempt(0, n);
    if (refused) await isolate(0, n, refused);
  }
  return letters;
}

/** Where a sink sets refused rows aside, when it has a dead-letter table. */
export interface SetAside {
  readonly table: DeadLetterTable;
  readonly sink: string;
  readonly subtask: number;
  readonly logger: Logger;
}

/**
 * Writes the rows inside the connection's open transaction. A refused row fails with a
 * `RecordWriteError` naming its position (after which the transaction is rolled back), or,
 * with `setAside`, goes to the dead-letter table in the same transaction.
 */
export async function writeRowsOrExplain<T>(
  connection: PostgresConnection,
  mapping: CompiledMapping<T>,
  rows: PendingRows,
  setAside: SetAside | undefined,
): Promise<void> {
  try {
    if (!setAside) {
      await writeRows(connection, mapping, rows);
      return;
    }
    const letters = await writeRowsSettingAside(connection, mapping, rows);
    if (letters.length === 0) return;
    await setAside.table.insert(connection, setAside.sink, setAside.subtask, letters);
    setAside.logger.warn(`set ${letters.length} row(s) aside in ${setAside.table.qualified}`, {
      sink: setAside.sink,
      subtask: setAside.subtask,
      first: letters[0]?.position,
      sqlstate: letters[0]?.sqlstate,
    });
  } catch (error) {
    if (!isRejection(error)) throw error;
    throw (
      (await refusedPrivilege(connection, mapping, setAside, error)) ??
      (await explainRejection(connection, mapping, rows, error))
    );
  }
}

/**
 * For a write the server refused with 42501: rolls the transaction back (it is aborted
 * anyway) and returns the ConfigurationError naming the privilege the role lacks on the
 * table or the dead-letter table. Undefined for any other refusal, or when the role lacks
 * none (a row-level security policy refusing a row: that is about the row, and is explained
 * as any refused row).
 */
export async function refusedPrivilege<T>(
  connection: PostgresConnection,
  mapping: CompiledMapping<T>,
  setAside: SetAside | undefined,
  error: ServerError,
): Promise<ConfigurationError | undefined> {
  if (error.sqlstate !== INSUFFICIENT_PRIVILEGE) return undefined;
  await connection.query("ROLLBACK").catch(() => {});
  for (const needs of [mappingNeeds(mapping), ...(setAside ? [setAside.table.needs] : [])]) {
    const refusal = await privilegeRefusal(connection, needs, error);
    if (refusal) return refusal;
  }
  return undefined;
}

/** Whether an error from {@link writeRows} is the server refusing data (not a lost connection). */
export function isRejection(error: unknown): error is ServerError {
  return error instanceof ServerError && !isTransientPostgresError(error);
}

function rejected(
  position: RecordPosition | undefined,
  error: ServerError,
  column?: string,
  note = "",
): RecordWriteError {
  return new RecordWriteError(
    position,
    new RowRejectedError(column ?? error.column, error.sqlstate, `${error.message}${note}`, { cause: error }),
  );
}

/**
 * The error to fail the job with when the server refused a COPY of `rows` rows streamed from
 * elsewhere (a write-ahead log): COPY names the refused line, and `positionOf` finds that
 * row's position (from 0). Without a line, the error says so and names no record.
 */
export async function rejectedCopy(
  error: ServerError,
  rows: number,
  positionOf: (row: number) => Promise<RecordPosition | undefined>,
): Promise<RecordWriteError> {
  const copyLine = copyContext(error);
  if (!copyLine)
    return rejected(undefined, error, undefined, ` (in a COPY of ${rows} or more rows; no line was named)`);
  return rejected(await positionOf(copyLine.line - 1), error, copyLine.column);
}

/** ON CONFLICT DO UPDATE met the same key twice in one statement. */
const CARDINALITY_VIOLATION = "21000";

/**
 * The first two upserted rows (from 0) whose keys the server takes as equal though their text
 * forms differ (the buffer keeps one row per text form), one statement's rows at a time.
 */
async function collidingRows<T>(
  connection: PostgresConnection,
  mapping: CompiledMapping<T>,
  rows: Extract<PendingRows, { kind: "upsert" }>,
): Promise<[number, number] | undefined> {
  const keyColumns = mapping.keyColumns as readonly number[];
  const keyNames = keyColumns.map((c) => mapping.columns[c]?.name as string);
  const { rows: types } = await connection.query(
    "SELECT attname, format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = ANY($2::text[]) AND NOT attisdropped",
    [mapping.qualifiedTable, keyNames],
  );
  const typeOf = new Map(types.map((t) => [String(t.attname), String(t.type)]));
  if (keyNames.some((name) => !typeOf.has(name))) return undefined;
  const statement = mapping.collisionStatement(keyNames.map((name) => typeOf.get(name) as string));
  const n = rows.positions.length;
  for (let at = 0; at < n; at += UPSERT_ROWS_PER_STATEMENT) {
    const end = Math.min(n, at + UPSERT_ROWS_PER_STATEMENT);
    const { rows: found } = await connection.query(
      statement,
      keyColumns.map((c) => (rows.columns[c] as (string | null)[]).slice(at, end)),
    );
    const pair = found[0]?.rows as Array<number | string> | undefined;
    if (pair && pair.length === 2) return [at + Number(pair[0]) - 1, at + Number(pair[1]) - 1];
  }
  return undefined;
}

/**
 * After the server refused rows inside a transaction: rolls that transaction back (it is
 * aborted anyway), finds the refused row and returns the error to fail the job with. COPY
 * names the line itself; for an upsert statement the rows are bisected, each half tried
 * under a savepoint of a transaction that is always rolled back, so nothing of it is
 * written. A row that fails only together with others is reported at the first row's
 * position, saying so.
 */
export async function explainRejection<T>(
  connection: PostgresConnection,
  mapping: CompiledMapping<T>,
  rows: PendingRows,
  error: ServerError,
): Promise<RecordWriteError> {
  await connection.query("ROLLBACK").catch(() => {});
  const copyLine = copyContext(error);
  if (rows.kind === "copy" && copyLine) return rejected(positionAt(rows, copyLine.line - 1), error, copyLine.column);
  const n = rowCount(rows);
  if (rows.kind === "upsert" && error.sqlstate === CARDINALITY_VIOLATION) {
    const pair = await collidingRows(connection, mapping, rows).catch((e: unknown) => {
      if (isTransientPostgresError(e)) throw e;
      return undefined;
    });
    if (pair) {
      const [first, second] = pair;
      const keyColumns = mapping.keyColumns as readonly number[];
      const column = keyColumns.length === 1 ? mapping.columns[keyColumns[0] as number]?.name : undefined;
      const other = positionAt(rows, first);
      return rejected(
        positionAt(rows, second),
        error,
        column,
        ` (its upsert key equals that of the record at ${other ? formatPosition(other) : "unknown position"} to Postgres, though not as text, and one statement cannot write a key twice)`,
      );
    }
  }
  try {
    await connection.query("BEGIN");
    await connection.query(`SET LOCAL lock_timeout = '${DIAGNOSIS_LOCK_TIMEOUT}'`);
    const fails = async (from: number, to: number): Promise<ServerError | undefined> => {
      await connection.query("SAVEPOINT exactly_diagnosis");
      try {
        await writeSlice(connection, mapping, rows, from, to);
        return undefined;
      } catch (e) {
        if (e instanceof ServerError) return e;
        throw e;
      } finally {
        await connection.query("ROLLBACK TO SAVEPOINT exactly_diagnosis");
      }
    };
    let from = 0;
    let to = n;
    let found = await fails(from, to);
    if (!found)
      return rejected(positionAt(rows, 0), error, undefined, ` (in a statement of ${n} rows; it did not fail again)`);
    while (to - from > 1) {
      const mid = from + Math.floor((to - from) / 2);
      const left = await fails(from, mid);
      if (left) {
        to = mid;
        found = left;
      } else {
        from = mid;
      }
    }
    const alone = await fails(from, from + 1);
    if (alone) return rejected(positionAt(rows, from), alone);
    return rejected(positionAt(rows, 0), found, undefined, ` (in a statement of ${n} rows; no single row fails alone)`);
  } catch (diagnosis) {
    // The search itself failed (a lock it waited for, a lost connection): report what is known.
    if (isTransientPostgresError(diagnosis)) throw diagnosis;
    return rejected(
      positionAt(rows, 0),
      error,
      undefined,
      ` (in a statement of ${n} rows; the row could not be singled out)`,
    );
  } finally {
    await connection.query("ROLLBACK").catch(() => {});
  }
}
