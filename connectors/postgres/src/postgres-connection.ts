/**
 * The port to the server: what the sinks need of a connection, in terms of their own. The
 * `pg` client sits behind it, in `pg/` (the one folder that imports `pg`), as the file sink's
 * storage sits behind its `RecoverableWriter`. Errors cross the port in two shapes only: a
 * {@link ServerError} with its SQLSTATE, or, for a connection that is gone, a core
 * `TransientError` (after which the connection is `broken` and a new one is needed).
 */
import { isTransientByDefault, TransientError } from "@exactly/core";

export interface QueryResult {
  readonly rows: ReadonlyArray<Record<string, unknown>>;
  readonly rowCount: number;
}

export interface PostgresConnection {
  /** One statement, values bound as `$1`, `$2` …. */
  query(statement: string, values?: readonly unknown[]): Promise<QueryResult>;
  /** Streams pieces of COPY's text format, each whole lines ending in `\n`, into `statement` (`COPY … FROM STDIN`); returns the rows copied. */
  copyFrom(statement: string, pieces: readonly string[]): Promise<number>;
  /** Streams bytes of COPY's text format, whole lines, into `statement`, as they come; returns the rows copied. */
  copyBytes(statement: string, chunks: AsyncIterable<Uint8Array>): Promise<number>;
  /** Closed by the server or the network: every call fails; connect again. */
  readonly broken: boolean;
  close(): Promise<void>;
}

/** Opens a connection; `purpose` becomes part of its application_name (seen in pg_stat_activity). */
export type PostgresConnect = (purpose: string) => Promise<PostgresConnection>;

/** An error the server returned: its SQLSTATE, and the column, constraint or COPY line it points at. */
export class ServerError extends Error {
  readonly sqlstate: string;
  readonly column: string | undefined;
  readonly constraint: string | undefined;
  readonly detail: string | undefined;
  /** Where in the statement: for COPY, "COPY t, line 5, column c: …". */
  readonly where: string | undefined;
  constructor(
    message: string,
    fields: { sqlstate: string; column?: string; constraint?: string; detail?: string; where?: string },
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "ServerError";
    this.sqlstate = fields.sqlstate;
    this.column = fields.column;
    this.constraint = fields.constraint;
    this.detail = fields.detail;
    this.where = fields.where;
  }
}

export const SQLSTATE = {
  UNDEFINED_OBJECT: "42704",
  UNDEFINED_TABLE: "42P01",
  DUPLICATE_OBJECT: "42710",
  UNIQUE_VIOLATION: "23505",
  DUPLICATE_TABLE: "42P07",
  IN_FAILED_TRANSACTION: "25P02",
  QUERY_CANCELED: "57014",
} as const;

/**
 * SQLSTATEs that may pass if the work is retried on a new connection or in a new
 * transaction: connection exceptions (08), the server shutting down or starting (57P01–03),
 * serialization failures and deadlocks (40001, 40P01), a lock wait past `lock_timeout`
 * (55P03), too many connections (53300), out of memory or disk (53200, 53100).
 */
const TRANSIENT_SQLSTATES = new Set(["57P01", "57P02", "57P03", "40001", "40P01", "55P03", "53300", "53200", "53100"]);

export function sqlstateOf(error: unknown): string | undefined {
  for (let e = error; e instanceof Error; e = e.cause) {
    if (e instanceof ServerError) return e.sqlstate;
  }
  return undefined;
}

/** What the Postgres sinks retry: a lost connection, or a server error that may pass. */
export function isTransientPostgresError(error: unknown): boolean {
  if (error instanceof TransientError || isTransientByDefault(error)) return true;
  const sqlstate = sqlstateOf(error);
  return sqlstate !== undefined && (sqlstate.startsWith("08") || TRANSIENT_SQLSTATES.has(sqlstate));
}
