import { ConfigurationError, type RetryOptions } from "@exactly/core";
import { requirePositiveInteger } from "@exactly/core/internal";
import { FENCE_TABLE, MARKER_TABLE, PROGRESS_TABLE } from "./bookkeeping.ts";
import { type DeadLetterOptions, DeadLetterTable } from "./dead-letters.ts";
import type { PostgresConnectionOptions } from "./pg/pg-connection.ts";
import { CompiledMapping, type TableMapping } from "./table-mapping.ts";

/** What every Postgres sink takes. */
export interface PostgresSinkOptions<T> {
  /** A connection string, or `pg`'s client settings. Credentials are never logged. */
  readonly connection: PostgresConnectionOptions;
  readonly table: TableMapping<T>;
  /**
   * The sink's name in the database: the prefix of its prepared transactions
   * (`<name>:<subtask>:<checkpoint>`), marker and progress rows and lock. Default: the
   * sink's name in the job. Letters, digits, `_ . -`; unique per database (checked at open).
   */
  readonly name?: string;
  /** Schema of the sink's own tables (markers, progress, and in a sharded job fences); default the table's schema. */
  readonly bookkeepingSchema?: string;
  /** Rows buffered before they are written into the open transaction; default 10,000. */
  readonly flushRows?: number;
  /** Retries of commits on lost connections and transient server errors; default 8 attempts, 100 ms doubling to 5 s. */
  readonly commitRetry?: RetryOptions;
  /** How long open waits for a session that still holds this sink's name (a process just killed); default 30 s. */
  readonly nameLockWaitMs?: number;
  /**
   * Off by default: the first row that cannot be written fails the job. When set, such rows
   * (a value that cannot be encoded, a data exception or constraint violation from the
   * server) go to this table, in the same transaction as the checkpoint's other rows.
   */
  readonly deadLetter?: DeadLetterOptions;
}

export const DEFAULT_COMMIT_RETRY: RetryOptions = { maxAttempts: 8, initialDelayMs: 100, maxDelayMs: 5000 };

/** The options checked once, where a sink is built. */
export interface ResolvedPostgresOptions<T> {
  readonly mapping: CompiledMapping<T>;
  readonly bookkeepingSchema: string;
  readonly flushRows: number;
  readonly nameLockWaitMs: number;
  readonly deadLetters: DeadLetterTable | undefined;
}

export function resolvePostgresOptions<T>(options: PostgresSinkOptions<T>): ResolvedPostgresOptions<T> {
  const mapping = new CompiledMapping(options.table);
  if (options.deadLetter !== undefined && !options.deadLetter.table)
    throw new ConfigurationError("deadLetter.table", "is required when deadLetter is set");
  const bookkeepingSchema = options.bookkeepingSchema ?? mapping.schema;
  const deadLetters = options.deadLetter && new DeadLetterTable(options.deadLetter, mapping.schema);
  refuseBookkeepingTable("table", mapping.schema, mapping.table, bookkeepingSchema);
  if (deadLetters && options.deadLetter)
    refuseBookkeepingTable("deadLetter.table", deadLetters.schema, options.deadLetter.table, bookkeepingSchema);
  return {
    mapping,
    bookkeepingSchema,
    flushRows: requirePositiveInteger("flushRows", options.flushRows ?? 10_000),
    nameLockWaitMs: options.nameLockWaitMs ?? 30_000,
    deadLetters,
  };
}

/**
 * Records never reach the sinks' own tables: rows there would pass for markers, progress or
 * fences. Here, when the sink is built, by name in its own bookkeeping schema (where it would
 * create them); when it opens, `refuseOwnTable` recognises such a table in any schema by what
 * it is.
 */
function refuseBookkeepingTable(setting: string, schema: string, table: string, bookkeepingSchema: string): void {
  if (schema === bookkeepingSchema && (table === MARKER_TABLE || table === PROGRESS_TABLE || table === FENCE_TABLE))
    throw new ConfigurationError(
      setting,
      `names ${JSON.stringify(`${schema}.${table}`)}, a table the Postgres sinks keep their own bookkeeping in`,
    );
}
