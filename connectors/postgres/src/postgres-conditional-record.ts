import { type ConditionalRecord, ConfigurationError, type VersionedValue } from "@exactly/core";
import { ensureOwnTable, OWN_TABLES, RECORD_TABLE } from "./bookkeeping.ts";
import {
  isPgClientSource,
  type PgClientSource,
  type PostgresConnectionOptions,
  pgBorrow,
  pgConnect,
} from "./pg/pg-connection.ts";
import { isTransientPostgresError, type PostgresConnect, type PostgresConnection } from "./postgres-connection.ts";
import { qualifiedName } from "./sql.ts";

export { RECORD_TABLE };

export interface PostgresConditionalRecordOptions {
  /**
   * A connection string or `pg` client settings (the record opens one connection and closes
   * it), or a `pg.Pool` or connected `pg.Client` of the caller's (borrowed, never ended; a
   * pool's client is held from the first call until close).
   */
  readonly connection: PostgresConnectionOptions | PgClientSource;
  /** The record's row: any text, always a bound value. */
  readonly name: string;
  /** Default `public`; created if missing. */
  readonly schema?: string;
  /** Default `exactly_records`; created if missing. */
  readonly table?: string;
}

/** A version is the row's bigint counter as decimal text. */
const VERSION = /^[1-9][0-9]{0,18}$/;

/**
 * A {@link ConditionalRecord} as one row `(name, version, value)` of a bookkeeping table.
 * The version is a counter the row carries: a replacement is one `UPDATE … SET version =
 * version + 1 … WHERE name = $1 AND version = $2`, a creation one `INSERT … ON CONFLICT DO
 * NOTHING`. Under READ COMMITTED, concurrent updates of one row wait for the first and then
 * see its new version, so exactly one matches; each statement commits alone.
 */
export class PostgresConditionalRecord<T> implements ConditionalRecord<T> {
  readonly name: string;
  readonly schema: string;
  /** The table as a quoted `"schema"."table"`. */
  readonly table: string;
  private readonly tableName: string;
  private readonly connect: PostgresConnect;
  private connection: Promise<PostgresConnection> | undefined;

  constructor(options: PostgresConditionalRecordOptions) {
    this.name = options.name;
    this.schema = requireIdentifier("schema", options.schema ?? "public");
    this.tableName = requireIdentifier("table", options.table ?? RECORD_TABLE);
    this.table = qualifiedName(this.schema, this.tableName);
    this.connect = isPgClientSource(options.connection) ? pgBorrow(options.connection) : pgConnect(options.connection);
  }

  describe(): string {
    return `row ${JSON.stringify(this.name)} of ${this.table}`;
  }

  async read(): Promise<VersionedValue<T> | undefined> {
    const { rows } = await (await this.connected()).query(
      `SELECT version::text AS version, value FROM ${this.table} WHERE name = $1`,
      [this.name],
    );
    const row = rows[0];
    return row && { value: row.value as T, version: String(row.version) };
  }

  async replace(expected: string | undefined, value: T): Promise<string | undefined> {
    // Never a version of this table: it cannot be current.
    if (expected !== undefined && !VERSION.test(expected)) return undefined;
    const connection = await this.connected();
    const json = JSON.stringify(value);
    const { rows } =
      expected === undefined
        ? await connection.query(
            `INSERT INTO ${this.table} (name, version, value) VALUES ($1, 1, $2::jsonb)
             ON CONFLICT (name) DO NOTHING RETURNING version::text AS version`,
            [this.name, json],
          )
        : await connection.query(
            `UPDATE ${this.table} SET version = version + 1, value = $3::jsonb
             WHERE name = $1 AND version = $2 RETURNING version::text AS version`,
            [this.name, expected, json],
          );
    return rows[0] === undefined ? undefined : String(rows[0].version);
  }

  isTransient(error: unknown): boolean {
    return isTransientPostgresError(error);
  }

  /** Closes the connection it opened, or gives a borrowed one back. */
  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    await (await connection?.catch(() => undefined))?.close();
  }

  /** One connection, opened (and the table created) at first use and again after it was lost. */
  private async connected(): Promise<PostgresConnection> {
    const pending = this.connection;
    if (pending) {
      const current = await pending.catch(() => undefined);
      if (current && !current.broken) return current;
      // The first caller to find it lost replaces it; the others use the replacement.
      if (this.connection === pending) {
        this.connection = undefined;
        await current?.close();
      }
    }
    // Set before any await: concurrent first calls share one connection.
    this.connection ??= this.open();
    return this.connection;
  }

  private async open(): Promise<PostgresConnection> {
    const connection = await this.connect("conditional-record");
    try {
      await ensureOwnTable(connection, OWN_TABLES.records, this.schema, "schema", this.tableName);
      return connection;
    } catch (error) {
      await connection.close();
      throw error;
    }
  }
}

/** A name Postgres keeps whole: 1–63 bytes (a longer one is cut, and could meet another table's). */
function requireIdentifier(setting: string, name: string): string {
  if (typeof name !== "string" || name.length === 0 || Buffer.byteLength(name) > 63 || name.includes("\0")) {
    throw new ConfigurationError(setting, `must be 1–63 bytes without NUL, got ${JSON.stringify(name)}`);
  }
  return name;
}
