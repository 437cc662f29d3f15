/**
 * Writes buffered rows on the bulk paths only: COPY FROM STDIN for appends, and for upserts
 * `INSERT … SELECT … FROM unnest($1::text[], …) ON CONFLICT …` in statements of many rows.
 * Never a statement per row. When the server refuses a statement, {@link explainRejection}
 * finds the row it refused, so the job's error names the record's source position, the
 * column and the SQLSTATE.
 */
import { type RecordPosition, RecordWriteError } from "@exactly/core";
import { isTransientPostgresError, type PostgresConnection, ServerError } from "./connection.ts";
import { RowRejectedError } from "./errors.ts";
import type { PendingRows } from "./row-buffer.ts";
import type { CompiledMapping } from "./table-mapping.ts";

/** Rows per upsert statement: one round trip carries this many. */
export const UPSERT_ROWS_PER_STATEMENT = 5000;

/** How long the search for a refused row waits for a lock (a pending checkpoint's prepared rows). */
const DIAGNOSIS_LOCK_TIMEOUT = "5s";

function rowCount(rows: PendingRows): number {
  return rows.positions.length;
}

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
      from === 0 && to === rows.lines.length ? rows.lines : rows.lines.slice(from, to),
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
  const copyLine = error.where?.match(/^COPY [^,]+, line (\d+)(?:, column ([^:]+))?/);
  if (rows.kind === "copy" && copyLine) {
    const line = Number(copyLine[1]) - 1;
    return rejected(rows.positions[line], error, copyLine[2]);
  }
  const n = rowCount(rows);
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
      return rejected(rows.positions[0], error, undefined, ` (in a statement of ${n} rows; it did not fail again)`);
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
    if (alone) return rejected(rows.positions[from], alone);
    return rejected(rows.positions[0], found, undefined, ` (in a statement of ${n} rows; no single row fails alone)`);
  } catch (diagnosis) {
    // The search itself failed (a lock it waited for, a lost connection): report what is known.
    if (isTransientPostgresError(diagnosis)) throw diagnosis;
    return rejected(
      rows.positions[0],
      error,
      undefined,
      ` (in a statement of ${n} rows; the row could not be singled out)`,
    );
  } finally {
    await connection.query("ROLLBACK").catch(() => {});
  }
}
