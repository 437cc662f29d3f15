/**
 * What the sinks' role must be allowed to do, asked of the server's own privilege functions
 * (`has_schema_privilege`, `has_column_privilege` …). A missing privilege (SQLSTATE 42501) is
 * no fault a restart gets past, so it is a `ConfigurationError` naming the setting, the
 * privilege and the table: checked when a sink opens, and asked again when a write is refused
 * with 42501 (a privilege revoked while the sink runs).
 */
import { ConfigurationError } from "@exactly/core";
import type { PostgresConnection } from "./postgres-connection.ts";
import { readableName } from "./sql.ts";
import type { CompiledMapping } from "./table-mapping.ts";

export const INSUFFICIENT_PRIVILEGE = "42501";

export type TablePrivilege = "SELECT" | "INSERT" | "UPDATE" | "DELETE";

export interface NeededPrivilege {
  readonly privilege: TablePrivilege;
  /** The columns the statements use it on; none: the table's (DELETE has no column form). */
  readonly columns?: readonly string[];
}

/** What a sink does with one table, and the privileges that takes. */
export interface TableNeeds {
  /** The setting that names the table, for the error. */
  readonly setting: string;
  /** `"schema"."table"`, quoted. */
  readonly table: string;
  /** The table as a reader writes it (`public.orders`), for the error. */
  readonly readable: string;
  /** What the sink does there ("write its rows"), for the error. */
  readonly purpose: string;
  readonly privileges: readonly NeededPrivilege[];
  /**
   * The columns the sink writes, when the others are left to their defaults: a serial
   * column's default draws from its sequence, which takes USAGE on that sequence.
   */
  readonly writtenColumns?: readonly string[];
}

/** What the role lacks of `needs`, each as "INSERT on public.t" (with the columns when it holds it on some). */
export async function missingPrivileges(connection: PostgresConnection, needs: TableNeeds): Promise<string[]> {
  const privileges: string[] = [];
  const columns: (string | null)[] = [];
  for (const need of needs.privileges) {
    for (const column of need.columns ?? [null]) {
      privileges.push(need.privilege);
      columns.push(column);
    }
  }
  const { rows } = await connection.query(
    `SELECT u.p AS privilege, u.c AS column FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS u(p, c, n)
      WHERE NOT CASE WHEN u.c IS NULL THEN has_table_privilege(to_regclass($1)::oid, u.p)
                     ELSE has_column_privilege(to_regclass($1)::oid, u.c, u.p) END
      ORDER BY u.n`,
    [needs.table, privileges, columns],
  );
  const lacking: string[] = [];
  for (const need of needs.privileges) {
    const missing = rows.filter((r) => r.privilege === need.privilege).map((r) => r.column as string | null);
    if (missing.length === 0) continue;
    const all = need.columns === undefined || missing.length === need.columns.length;
    lacking.push(
      `${need.privilege} on ${needs.readable}${all ? "" : ` (column${missing.length > 1 ? "s" : ""} ${missing.join(", ")})`}`,
    );
  }
  if (needs.writtenColumns) {
    const { rows: sequences } = await connection.query(
      `SELECT s.seq FROM (
         SELECT pg_get_serial_sequence($1, a.attname::text) AS seq FROM pg_attribute a
          WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped AND a.attidentity = ''
            AND a.atthasdef AND NOT (a.attname::text = ANY($2::text[]))
       ) s
       WHERE s.seq IS NOT NULL AND NOT (has_sequence_privilege(s.seq, 'USAGE') OR has_sequence_privilege(s.seq, 'UPDATE'))`,
      [needs.table, needs.writtenColumns],
    );
    for (const s of sequences) lacking.push(`USAGE on sequence ${s.seq} (the default of a column the sink leaves out)`);
  }
  return lacking;
}

/**
 * What writing a mapping's rows takes: INSERT on the mapped columns (COPY and INSERT alike);
 * for upserts also SELECT on them (ON CONFLICT reads the key, and DO UPDATE the columns it
 * sets: Postgres 15 refuses the statement with less) and UPDATE on the columns it sets; USAGE
 * on the sequence of a serial column left to its default.
 */
export function mappingNeeds<T>(mapping: CompiledMapping<T>): TableNeeds {
  const columns = mapping.columns.map((c) => c.name);
  const keys = new Set(mapping.keyColumns ?? []);
  const updated = columns.filter((_c, i) => !keys.has(i));
  const privileges: NeededPrivilege[] = [{ privilege: "INSERT", columns }];
  if (mapping.keyColumns) {
    privileges.push({ privilege: "SELECT", columns });
    if (updated.length > 0) privileges.push({ privilege: "UPDATE", columns: updated });
  }
  return {
    setting: "table",
    table: mapping.qualifiedTable,
    readable: readableName(mapping.schema, mapping.table),
    purpose: "write its rows",
    privileges,
    writtenColumns: columns,
  };
}

async function currentRole(connection: PostgresConnection): Promise<string> {
  const { rows } = await connection.query("SELECT current_user::text AS role");
  return String(rows[0]?.role);
}

function refusal(needs: TableNeeds, role: string, lacking: readonly string[], cause?: unknown): ConfigurationError {
  return new ConfigurationError(
    needs.setting,
    `the role ${role} lacks ${lacking.join("; ")}, which the sink needs to ${needs.purpose}: grant ${lacking.length > 1 ? "them" : "it"}, or connect as a role that has ${lacking.length > 1 ? "them" : "it"}`,
    cause === undefined ? undefined : { cause },
  );
}

/** Refuses to go on, naming the setting and what is missing, if the role lacks any privilege of `needs`. */
export async function requirePrivileges(connection: PostgresConnection, needs: TableNeeds): Promise<void> {
  const lacking = await missingPrivileges(connection, needs);
  if (lacking.length > 0) throw refusal(needs, await currentRole(connection), lacking);
}

/**
 * After the server refused a statement on the table with 42501 (outside any transaction:
 * roll back first): the ConfigurationError naming what the role lacks, or undefined when it
 * lacks none of `needs` (a row-level security policy refusing a row, which is about the row).
 */
export async function privilegeRefusal(
  connection: PostgresConnection,
  needs: TableNeeds,
  cause: unknown,
): Promise<ConfigurationError | undefined> {
  const lacking = await missingPrivileges(connection, needs);
  return lacking.length > 0 ? refusal(needs, await currentRole(connection), lacking, cause) : undefined;
}

/**
 * The schema a table lives in: refuses, naming `setting`, if the role may not use it (or, with
 * `create`, may not create a table in it, or the schema itself when it is missing). Returns
 * whether the schema exists.
 */
export async function requireSchema(
  connection: PostgresConnection,
  setting: string,
  schema: string,
  options: { readonly create?: boolean; readonly readableSchema: string },
): Promise<boolean> {
  const { rows } = await connection.query(
    `SELECT current_user::text AS role, current_database()::text AS database, n.oid IS NOT NULL AS found,
            coalesce(has_schema_privilege(n.oid, 'USAGE'), false) AS usage,
            coalesce(has_schema_privilege(n.oid, 'CREATE'), false) AS "create",
            has_database_privilege(current_database(), 'CREATE') AS create_schema
       FROM (SELECT 1) AS one LEFT JOIN pg_namespace n ON n.nspname = $1`,
    [schema],
  );
  const row = rows[0] ?? {};
  const lack = (what: string) =>
    new ConfigurationError(
      setting,
      `the role ${row.role} lacks ${what}: grant it, or connect as a role that has it (or create what is missing for it)`,
    );
  if (row.found !== true) {
    if (options.create && row.create_schema !== true)
      throw lack(`CREATE on database ${row.database}, which it needs to create schema ${options.readableSchema}`);
    return false;
  }
  if (row.usage !== true) throw lack(`USAGE on schema ${options.readableSchema}`);
  if (options.create && row.create !== true)
    throw lack(`CREATE on schema ${options.readableSchema}, which it needs to create its tables there`);
  return true;
}
