/**
 * The optional dead-letter table, as Kafka Connect's `errors.tolerance = all` with a
 * dead-letter queue: a row that fails for what it holds — a value that cannot be encoded for
 * its column, or a row the server refuses with a data exception (SQLSTATE class 22) or an
 * integrity constraint violation (class 23) — goes into this table instead of failing the
 * job. Dead letters are written in the same transaction as the checkpoint's rows, so each
 * lands once, with the sink's guarantee, and a replay after a crash finds the same ones.
 * Any other refusal (a missing privilege, a dropped column) still fails the job: it is not
 * about the row. Off by default: without it the first bad row fails the job.
 */
import type { RecordPosition } from "@exactly/core";
import { ensureTable, refuseOwnTable } from "./bookkeeping.ts";
import { RowRejectedError } from "./errors.ts";
import { type PostgresConnection, ServerError } from "./postgres-connection.ts";
import { requirePrivileges, type TableNeeds } from "./privileges.ts";
import { qualifiedName, readableName } from "./sql.ts";

export interface DeadLetterOptions {
  /** The table dead letters go to; created if missing (see the guide for its columns). */
  readonly table: string;
  /** Default: the target table's schema. */
  readonly schema?: string;
}

/** A row that will not be written, and why. */
export interface DeadLetter {
  readonly position: RecordPosition | undefined;
  readonly sqlstate: string | undefined;
  readonly column: string | undefined;
  readonly error: string;
  /** The row's columns in their text forms (for a row the server refused). */
  readonly rowValues?: Readonly<Record<string, string | null>>;
  /** The record itself as JSON (for a record that could not be encoded); null if it has no JSON form. */
  readonly recordJson?: string | null;
}

/** Whether the server refused a row for what it holds, so the row can be set aside. */
export function isRowFault(error: unknown): error is ServerError {
  return error instanceof ServerError && (error.sqlstate.startsWith("22") || error.sqlstate.startsWith("23"));
}

/** A value as JSON for jsonb: bigints as strings, NUL (which jsonb refuses) as U+FFFD; null if it has no JSON form. */
function jsonbText(record: unknown): string | null {
  try {
    const json = JSON.stringify(record, (_key, value) =>
      typeof value === "bigint"
        ? value.toString()
        : typeof value === "string"
          ? value.replaceAll("\u0000", "\uFFFD")
          : value,
    );
    return json ?? null;
  } catch {
    return null;
  }
}

/** The dead letter of a record that could not be encoded. */
export function encodingDeadLetter(position: RecordPosition | undefined, record: unknown, error: unknown): DeadLetter {
  const rejected = error instanceof RowRejectedError ? error : undefined;
  return {
    position,
    sqlstate: rejected?.sqlstate,
    column: rejected?.column,
    error: error instanceof Error ? error.message : String(error),
    recordJson: jsonbText(record),
  };
}

const DEAD_LETTER_SETTING = "deadLetter.table";
const DEAD_LETTER_COLUMNS = [
  "sink",
  "subtask",
  "source_position",
  "sqlstate",
  "column_name",
  "error",
  "row_values",
  "record",
];

export class DeadLetterTable {
  readonly schema: string;
  readonly table: string;
  readonly qualified: string;

  constructor(options: DeadLetterOptions, defaultSchema: string) {
    this.schema = options.schema ?? defaultSchema;
    this.table = options.table;
    this.qualified = qualifiedName(this.schema, options.table);
  }

  /**
   * Creates the table if missing. One that exists must not be one of the sinks' own tables
   * (I8), and the role must be allowed to insert into it: checked here, when the sink opens,
   * each refused naming `deadLetter.table`.
   */
  async ensure(connection: PostgresConnection): Promise<void> {
    await ensureTable(connection, {
      schema: this.schema,
      table: this.table,
      definition: `sink text NOT NULL, subtask integer NOT NULL, source_position jsonb, sqlstate text, column_name text,
       error text NOT NULL, row_values jsonb, record jsonb, failed_at timestamptz NOT NULL DEFAULT now()`,
      setting: DEAD_LETTER_SETTING,
    });
    await refuseOwnTable(connection, DEAD_LETTER_SETTING, this.qualified);
    await requirePrivileges(connection, this.needs);
  }

  /** What inserting dead letters takes. */
  get needs(): TableNeeds {
    return {
      setting: DEAD_LETTER_SETTING,
      table: this.qualified,
      readable: readableName(this.schema, this.table),
      purpose: "set refused rows aside",
      privileges: [{ privilege: "INSERT", columns: DEAD_LETTER_COLUMNS }],
    };
  }

  /** Inside the transaction of the rows they were set aside from: one statement for all of them. */
  async insert(
    connection: PostgresConnection,
    sink: string,
    subtask: number,
    letters: readonly DeadLetter[],
  ): Promise<void> {
    if (letters.length === 0) return;
    await connection.query(
      `INSERT INTO ${this.qualified} (sink, subtask, source_position, sqlstate, column_name, error, row_values, record)
       SELECT $1, $2, u.p::jsonb, u.s, u.c, u.e, u.v::jsonb, u.r::jsonb
       FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[]) AS u(p, s, c, e, v, r)`,
      [
        sink,
        subtask,
        letters.map((l) => (l.position ? JSON.stringify(l.position) : null)),
        letters.map((l) => l.sqlstate ?? null),
        letters.map((l) => l.column ?? null),
        letters.map((l) => l.error.replaceAll("\u0000", "\uFFFD")),
        letters.map((l) => (l.rowValues ? jsonbText(l.rowValues) : null)),
        letters.map((l) => l.recordJson ?? null),
      ],
    );
  }
}
