/**
 * The only place SQL text is put together. Identifiers are always quoted here, and values
 * always travel as bound parameters; the one statement that cannot take a parameter
 * (`PREPARE TRANSACTION`/`COMMIT PREPARED` take a literal) gets a quoted literal built from
 * a name that was validated first.
 */
import { ConfigurationError } from "@exactly/core";

/** A quoted identifier: `"name"`, with embedded quotes doubled. */
export function quoteIdentifier(name: string): string {
  if (name.length === 0 || name.includes("\u0000"))
    throw new Error(`not a valid SQL identifier: ${JSON.stringify(name)}`);
  return `"${name.replaceAll('"', '""')}"`;
}

/** `"schema"."table"`. */
export function qualifiedName(schema: string, table: string): string {
  return `${quoteIdentifier(schema)}.${quoteIdentifier(table)}`;
}

/** An identifier as a reader would type it: bare when Postgres would take it so unquoted, else quoted. */
export function readableIdentifier(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`;
}

/** `schema.table` for messages (`public.orders`, `"My Schema".t`): never put into SQL. */
export function readableName(schema: string, table: string): string {
  return `${readableIdentifier(schema)}.${readableIdentifier(table)}`;
}

/** A quoted string literal (standard_conforming_strings, the default since 9.1): quotes doubled. */
export function quoteLiteral(value: string): string {
  if (value.includes("\u0000") || value.includes("\\")) throw new Error("a literal with NUL or backslash is refused");
  return `'${value.replaceAll("'", "''")}'`;
}

/** Names a sink may use: they become a prefix of prepared-transaction ids, marker rows and lock keys. */
const SINK_NAME = /^[A-Za-z0-9_.-]{1,120}$/;

/** Refuses a sink name that is not 1–120 of `A-Z a-z 0-9 _ . -`, naming the setting. */
export function validateSinkName(setting: string, name: string): string {
  if (!SINK_NAME.test(name)) {
    throw new ConfigurationError(
      setting,
      `must be 1–120 characters of A-Z, a-z, 0-9, "_", "." and "-" (it prefixes prepared-transaction ids), got ${JSON.stringify(name)}`,
    );
  }
  return name;
}
