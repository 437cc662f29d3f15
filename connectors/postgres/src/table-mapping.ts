/**
 * Which table a sink writes, which record field goes into which column, and whether rows
 * are appended (COPY; a duplicate would show) or upserted on a key (INSERT … ON CONFLICT).
 */
import { ConfigurationError } from "@exactly/core";
import { COLUMN_TYPES, type ColumnType, copyFieldEncoder, encodeValue, isColumnType, keyForm } from "./column-types.ts";
import { RowRejectedError } from "./errors.ts";
import { qualifiedName, quoteIdentifier } from "./sql.ts";

export interface ColumnMapping<T> {
  /** The column's name, as in the table (case-sensitive: it is always quoted). */
  readonly name: string;
  /** The Postgres type the value is encoded as; the column's own type applies on insert. */
  readonly type: ColumnType;
  /** The column's value for a record. Default: the record's field of the same name. */
  readonly value?: (record: T) => unknown;
}

export interface TableMapping<T> {
  /** Default "public". */
  readonly schema?: string;
  readonly table: string;
  readonly columns: readonly ColumnMapping<T>[];
  /**
   * "append": COPY FROM STDIN, every record a new row. `{ upsertOn: [...] }`: one row per
   * key, the last record of the key wins; the key columns need a unique index or constraint.
   */
  readonly write: "append" | { readonly upsertOn: readonly string[] };
}

/** A mapping checked once, with its statements built. */
export class CompiledMapping<T> {
  readonly schema: string;
  readonly table: string;
  readonly qualifiedTable: string;
  readonly columns: ReadonlyArray<{
    readonly name: string;
    readonly type: ColumnType;
    readonly get: (r: T) => unknown;
  }>;
  /** Per column, the record's COPY field: its value, encoded and escaped. */
  private readonly copyFields: ReadonlyArray<(record: T) => string>;
  /** Indexes into `columns` of the upsert key; undefined for append. */
  readonly keyColumns: readonly number[] | undefined;
  /** `COPY "s"."t" ("a", …) FROM STDIN`, for append. */
  readonly copyStatement: string;
  /** `INSERT … SELECT … FROM unnest($1::text[], …) ON CONFLICT …`, for upsert. */
  readonly upsertStatement: string | undefined;
  /** Per key column, how its text form is compared (see keyForm); undefined: as it is. */
  private readonly keyForms: ReadonlyArray<((text: string) => string) | undefined> = [];

  constructor(mapping: TableMapping<T>, setting = "table") {
    this.schema = mapping.schema ?? "public";
    this.table = mapping.table;
    if (!this.table) throw new ConfigurationError(`${setting}.table`, "is required");
    if (mapping.columns.length === 0)
      throw new ConfigurationError(`${setting}.columns`, "must name at least one column");
    const seen = new Set<string>();
    this.columns = mapping.columns.map((c, i) => {
      if (!c.name) throw new ConfigurationError(`${setting}.columns[${i}].name`, "is required");
      if (seen.has(c.name))
        throw new ConfigurationError(`${setting}.columns`, `column ${JSON.stringify(c.name)} is mapped twice`);
      seen.add(c.name);
      if (!isColumnType(c.type)) {
        throw new ConfigurationError(
          `${setting}.columns[${i}].type`,
          `${JSON.stringify(c.type)} is not one of ${COLUMN_TYPES.join(", ")}`,
        );
      }
      const name = c.name;
      return { name, type: c.type, get: c.value ?? ((r: T) => (r as Record<string, unknown>)[name]) };
    });
    this.copyFields = this.columns.map(({ name, type, get }) => {
      const field = copyFieldEncoder(type);
      return (record: T) => field(get(record), name);
    });
    this.qualifiedTable = qualifiedName(this.schema, this.table);
    const list = this.columns.map((c) => quoteIdentifier(c.name)).join(", ");
    this.copyStatement = `COPY ${this.qualifiedTable} (${list}) FROM STDIN`;
    if (mapping.write === "append") {
      this.keyColumns = undefined;
      this.upsertStatement = undefined;
    } else {
      const key = mapping.write.upsertOn;
      if (key.length === 0) throw new ConfigurationError(`${setting}.write.upsertOn`, "must name at least one column");
      this.keyColumns = key.map((k) => {
        const index = this.columns.findIndex((c) => c.name === k);
        if (index < 0)
          throw new ConfigurationError(`${setting}.write.upsertOn`, `${JSON.stringify(k)} is not a mapped column`);
        return index;
      });
      const casts = this.columns.map((c, i) => `u.c${i}::${c.type}`).join(", ");
      const arrays = this.columns.map((_c, i) => `$${i + 1}::text[]`).join(", ");
      const aliases = this.columns.map((_c, i) => `c${i}`).join(", ");
      const keys = new Set(this.keyColumns);
      const updates = this.columns
        .filter((_c, i) => !keys.has(i))
        .map((c) => `${quoteIdentifier(c.name)} = EXCLUDED.${quoteIdentifier(c.name)}`);
      const conflict = `ON CONFLICT (${key.map(quoteIdentifier).join(", ")}) ${
        updates.length > 0 ? `DO UPDATE SET ${updates.join(", ")}` : "DO NOTHING"
      }`;
      this.keyForms = this.keyColumns.map((i) => keyForm((this.columns[i] as (typeof this.columns)[number]).type));
      this.upsertStatement = `INSERT INTO ${this.qualifiedTable} (${list}) SELECT ${casts} FROM unnest(${arrays}) AS u(${aliases}) ${conflict}`;
    }
  }

  /**
   * For upsert: a statement giving the first two rows (ordinals from 1) of key arrays
   * `$1::text[]`, … whose keys the server takes as equal, to name both records when a
   * statement touched a key twice. `columnTypes`: each key column's type in the table
   * (`format_type` of it, from the server), which the key is cast to on insert after the
   * mapped type, as in the upsert statement (a numeric(10,2) key rounds there).
   */
  collisionStatement(columnTypes: readonly string[]): string {
    const key = this.keyColumns as readonly number[];
    const arrays = key.map((_k, i) => `$${i + 1}::text[]`).join(", ");
    const aliases = key.map((_k, i) => `k${i}`).join(", ");
    const casts = key
      .map((c, i) => `(u.k${i}::${(this.columns[c] as (typeof this.columns)[number]).type})::${columnTypes[i]}`)
      .join(", ");
    return `SELECT (array_agg(u.n ORDER BY u.n))[1:2] AS rows FROM unnest(${arrays}) WITH ORDINALITY AS u(${aliases}, n) GROUP BY ${casts} HAVING count(*) > 1 ORDER BY min(u.n) LIMIT 1`;
  }

  get upserts(): boolean {
    return this.keyColumns !== undefined;
  }

  /** A record's columns in their text forms; throws RowRejectedError naming the column. */
  encode(record: T): (string | null)[] {
    const columns = this.columns;
    const cells = new Array<string | null>(columns.length);
    for (let i = 0; i < columns.length; i++) {
      const c = columns[i] as (typeof columns)[number];
      cells[i] = encodeValue(c.type, c.get(record), c.name);
    }
    // NULL never conflicts, so a row with a NULL key would be a new row each time: not an upsert.
    for (const k of this.keyColumns ?? []) {
      if (cells[k] === null)
        throw new RowRejectedError(
          (columns[k] as (typeof columns)[number]).name,
          "23502",
          "an upsert key cannot be NULL",
        );
    }
    return cells;
  }

  /**
   * A record's row as one line of COPY's text format, as `copyLine(encode(record))` but with no
   * array of cells between: the append path and the write-ahead log encode every record so.
   */
  encodeLine(record: T): string {
    const fields = this.copyFields;
    let line = "";
    for (let i = 0; i < fields.length; i++) {
      const field = (fields[i] as (r: T) => string)(record);
      // As encode(): NULL never conflicts, so a row with a NULL key would be no upsert.
      if (field === "\\N" && this.keyColumns?.includes(i))
        throw new RowRejectedError(
          (this.columns[i] as (typeof this.columns)[number]).name,
          "23502",
          "an upsert key cannot be NULL",
        );
      line = i === 0 ? field : `${line}\t${field}`;
    }
    return line;
  }

  /**
   * The upsert key of encoded cells, as one string, in the form Postgres compares where that
   * is exact (see keyForm): the key cells joined by NUL, which no text form holds.
   */
  keyOf(cells: readonly (string | null)[]): string {
    const key = this.keyColumns as readonly number[];
    const forms = this.keyForms;
    if (key.length === 1) {
      const cell = cells[key[0] as number] as string;
      const form = forms[0];
      return form ? form(cell) : cell;
    }
    return key
      .map((i, k) => {
        const form = forms[k];
        const cell = cells[i] as string;
        return form ? form(cell) : cell;
      })
      .join("\u0000");
  }
}
