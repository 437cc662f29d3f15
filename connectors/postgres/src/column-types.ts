/**
 * The Postgres column types a table mapping writes, and how a JavaScript value becomes the
 * type's text form: the form COPY reads, and the elements of the `text[]` arrays the upsert
 * statement unnests and casts. Values that cannot be encoded are refused here, per record,
 * before anything is sent, with the SQLSTATE the server would give.
 */
import { RowRejectedError } from "./errors.ts";

type Encoder = (value: unknown, column: string) => string;

const INVALID_TEXT = "22P02";
const OUT_OF_RANGE = "22003";
const NUL_IN_TEXT = "22021";
/** A lone surrogate has no UTF-8 form: the client would send U+FFFD in its place. */
const NOT_IN_REPERTOIRE = "22021";
const WRONG_TYPE = "42804";

function reject(column: string, sqlstate: string, message: string): never {
  throw new RowRejectedError(column, sqlstate, message);
}

function describeValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === "bigint") return `${value}n`;
  if (value instanceof Date) return `Date(${Number.isNaN(value.getTime()) ? "invalid" : value.toISOString()})`;
  return typeof value === "object" ? Object.prototype.toString.call(value) : String(value);
}

/** `String.prototype.isWellFormed` (ES2024; the lib here is ES2023, Node has it since 20). */
type WellFormedCheck = string & { isWellFormed(): boolean };

function text(value: unknown, column: string): string {
  let s: string;
  if (typeof value === "string") s = value;
  else if (typeof value === "number" || typeof value === "bigint" || typeof value === "boolean") s = String(value);
  else return reject(column, WRONG_TYPE, `${describeValue(value)} is not text`);
  if (s.includes("\u0000")) reject(column, NUL_IN_TEXT, "text cannot contain the NUL character");
  // Cheap for the usual strings: V8 knows a one-byte string is well formed without a scan.
  if (!(s as WellFormedCheck).isWellFormed())
    reject(
      column,
      NOT_IN_REPERTOIRE,
      "text holds a lone surrogate (UTF-16 that is no Unicode), which would be stored as U+FFFD",
    );
  return s;
}

function integer(bits: 16 | 32 | 64): Encoder {
  const max = (1n << BigInt(bits - 1)) - 1n;
  const min = -max - 1n;
  // Numbers, the common case, are checked as numbers: a BigInt per value costs more than the
  // rest of the row. Every safe integer fits 64 bits.
  const maxNumber = bits === 64 ? Number.MAX_SAFE_INTEGER : Number(max);
  const minNumber = bits === 64 ? Number.MIN_SAFE_INTEGER : Number(min);
  return (value, column) => {
    let n: bigint;
    if (typeof value === "number") {
      if (!Number.isInteger(value)) reject(column, INVALID_TEXT, `${value} is not an integer`);
      if (!Number.isSafeInteger(value))
        reject(column, OUT_OF_RANGE, `${value} is beyond 2^53: pass a bigint or a string`);
      if (value < minNumber || value > maxNumber)
        reject(column, OUT_OF_RANGE, `${value} is out of range for a ${bits}-bit integer`);
      return String(value);
    }
    if (typeof value === "bigint") n = value;
    else if (typeof value === "string" && /^[+-]?\d+$/.test(value.trim())) n = BigInt(value.trim());
    else return reject(column, INVALID_TEXT, `${describeValue(value)} is not an integer`);
    if (n < min || n > max) reject(column, OUT_OF_RANGE, `${n} is out of range for a ${bits}-bit integer`);
    return n.toString();
  };
}

function float(value: unknown, column: string): string {
  if (typeof value === "number") {
    if (Number.isNaN(value)) return "NaN";
    if (value === Number.POSITIVE_INFINITY) return "Infinity";
    if (value === Number.NEGATIVE_INFINITY) return "-Infinity";
    // String(-0) is "0"; float columns keep the sign of zero.
    if (value === 0 && 1 / value < 0) return "-0";
    return String(value);
  }
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "string" && value.trim() !== "" && !Number.isNaN(Number(value))) return value.trim();
  return reject(column, INVALID_TEXT, `${describeValue(value)} is not a number`);
}

const NUMERIC = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

function numeric(value: unknown, column: string): string {
  if (typeof value === "number") {
    if (!Number.isFinite(value) && !Number.isNaN(value)) reject(column, INVALID_TEXT, `${value} is not a numeric`);
    return Number.isNaN(value) ? "NaN" : String(value);
  }
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "string" && (NUMERIC.test(value.trim()) || value.trim() === "NaN")) return value.trim();
  return reject(column, INVALID_TEXT, `${describeValue(value)} is not a numeric`);
}

function boolean(value: unknown, column: string): string {
  if (typeof value === "boolean") return value ? "t" : "f";
  return reject(column, INVALID_TEXT, `${describeValue(value)} is not a boolean`);
}

function timestamp(value: unknown, column: string): string {
  const date = value instanceof Date ? value : typeof value === "number" ? new Date(value) : undefined;
  if (date) {
    if (Number.isNaN(date.getTime())) reject(column, INVALID_TEXT, `${describeValue(value)} is not a valid time`);
    return date.toISOString();
  }
  // A string is the server's to parse (time zones, 'infinity'); only NUL is refused here.
  if (typeof value === "string") return text(value, column);
  return reject(column, INVALID_TEXT, `${describeValue(value)} is not a time (Date, epoch milliseconds or string)`);
}

/** Thrown by {@link jsonReplacer}: a value JSON.stringify would write as something else. */
class ChangedInJson extends Error {}

/** Objects JSON.stringify writes as `{}` or as their indexes, not as what they hold. */
function isLossyObject(v: object): boolean {
  return (
    v instanceof Map ||
    v instanceof Set ||
    v instanceof WeakMap ||
    v instanceof WeakSet ||
    v instanceof RegExp ||
    v instanceof Error ||
    v instanceof Promise ||
    v instanceof ArrayBuffer ||
    ArrayBuffer.isView(v)
  );
}

/**
 * JSON.stringify's replacer: bigints become strings; what stringify would change without a
 * word (NaN and Infinity to null, an invalid Date to null, a Map or Set to `{}`, a function or
 * `undefined` in an array to null, a function in an object dropped) is refused instead. An
 * `undefined` property is left out, as absent. Called with the holder as `this`.
 */
function jsonReplacer(this: unknown, key: string, v: unknown): unknown {
  // A Date reaches the replacer as what its toJSON gave: null for an invalid one. Only then is
  // the holder's own value looked at.
  if (v === null && (this as Record<string, unknown>)[key] instanceof Date)
    throw new ChangedInJson("an invalid Date has no JSON form (it would be stored as null)");
  switch (typeof v) {
    case "string":
    case "boolean":
      return v;
    case "number":
      if (!Number.isFinite(v)) throw new ChangedInJson(`${v} has no JSON form (it would be stored as null)`);
      return v;
    case "bigint":
      return v.toString();
    case "object":
      if (v !== null && !Array.isArray(v)) {
        const proto = Object.getPrototypeOf(v);
        if (proto !== Object.prototype && proto !== null && isLossyObject(v))
          throw new ChangedInJson(`${describeValue(v)} has no JSON form (it would be stored as {})`);
      }
      return v;
    case "undefined":
      if (Array.isArray(this)) throw new ChangedInJson("undefined in an array would be stored as null");
      return v;
    default:
      throw new ChangedInJson(`a ${typeof v} has no JSON form (it would be dropped or stored as null)`);
  }
}

// In JSON.stringify's output a backslash is always escaped (`\\`), so an escape `\u0000` or
// `\udXXX` preceded by an even number of backslashes is the value's own code unit: U+0000,
// or a lone surrogate (stringify escapes those; pairs it writes as they are).
const NUL_ESCAPE = /(?<!\\)(?:\\\\)*\\u0000/;
const LONE_SURROGATE_ESCAPE = /(?<!\\)(?:\\\\)*\\ud[89a-f][0-9a-f]{2}/;

function json(value: unknown, column: string): string {
  let s: string | undefined;
  try {
    s = JSON.stringify(value, jsonReplacer);
  } catch (error) {
    if (error instanceof ChangedInJson) return reject(column, INVALID_TEXT, error.message);
    return reject(column, INVALID_TEXT, `not serializable as JSON: ${(error as Error).message}`);
  }
  if (s === undefined) return reject(column, INVALID_TEXT, `${describeValue(value)} is not serializable as JSON`);
  // The value's code units, not the text: a string holding a backslash and "u0000" is fine.
  // The regular expressions run only on the rare text holding such an escape at all.
  if (s.includes("\\u0000") && NUL_ESCAPE.test(s))
    reject(column, "22P05", "JSON cannot contain the NUL character (in a string or a key)");
  if (s.includes("\\ud") && LONE_SURROGATE_ESCAPE.test(s))
    reject(column, INVALID_TEXT, "JSON holds a lone surrogate (UTF-16 that is no Unicode) in a string or a key");
  return s;
}

const UUID = /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/;

function uuid(value: unknown, column: string): string {
  if (typeof value === "string" && UUID.test(value)) return value;
  return reject(column, INVALID_TEXT, `${describeValue(value)} is not a uuid`);
}

function bytea(value: unknown, column: string): string {
  if (value instanceof Uint8Array)
    return `\\x${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("hex")}`;
  return reject(column, WRONG_TYPE, `${describeValue(value)} is not bytes (Buffer or Uint8Array)`);
}

/** Each supported type, by the name used in a mapping (and in the statement's casts). */
const ENCODERS = {
  text,
  varchar: text,
  smallint: integer(16),
  integer: integer(32),
  bigint: integer(64),
  real: float,
  "double precision": float,
  numeric,
  boolean,
  timestamptz: timestamp,
  timestamp,
  date: timestamp,
  jsonb: json,
  json,
  uuid,
  bytea,
} satisfies Record<string, Encoder>;

/** A Postgres type a mapped column can have. The column's own type (varchar(n), numeric(p, s)) applies on insert. */
export type ColumnType = keyof typeof ENCODERS;

export const COLUMN_TYPES = Object.keys(ENCODERS) as ColumnType[];

export function isColumnType(type: string): type is ColumnType {
  return Object.hasOwn(ENCODERS, type);
}

/**
 * The text form of a value as Postgres compares it, for the types where that is exact and
 * cheap: the upsert buffer keeps one row per key by this form, so two records whose keys the
 * server takes as one (a uuid in upper and lower case, numeric 1 and 1.0, double precision
 * 1 and 1.0 or -0 and 0) are one key there too, and the later record wins. Other types'
 * text forms are compared as they are (integer, boolean and bytea forms are canonical
 * already; a time string is the server's to parse, and real rounds differently from a
 * JavaScript number); keys equal only to the server fail the statement, naming both records.
 */
export function keyForm(type: ColumnType): ((text: string) => string) | undefined {
  switch (type) {
    case "uuid":
      return (text) => text.toLowerCase().replaceAll("-", "");
    case "numeric":
      return canonicalNumeric;
    case "double precision":
      // Only decimal forms: both sides parse them to the nearest double.
      return (text) => (NUMERIC.test(text) ? String(Number(text)) : text);
    default:
      return undefined;
  }
}

/** A numeric text form as `<sign><digits>e<point>` without leading or trailing zeros: equal values, equal forms. */
function canonicalNumeric(text: string): string {
  const match = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!match) return text;
  const whole = match[2] ?? "";
  let digits = whole + (match[3] ?? "");
  let point = whole.length + Number(match[4] ?? 0);
  let start = 0;
  while (start < digits.length && digits[start] === "0") start++;
  point -= start;
  let end = digits.length;
  while (end > start && digits[end - 1] === "0") end--;
  digits = digits.slice(start, end);
  if (digits === "") return "0";
  return `${match[1] === "-" ? "-" : ""}${digits}e${point}`;
}

/** Types whose text forms never hold a backslash, newline, carriage return or tab: COPY takes them unescaped. */
const COPY_SAFE: ReadonlySet<ColumnType> = new Set<ColumnType>([
  "smallint",
  "integer",
  "bigint",
  "real",
  "double precision",
  "numeric",
  "boolean",
  "uuid",
]);

/**
 * The COPY text field of a value of `type`: `\N` for null and undefined, else its text form,
 * escaped where the type's forms can need it. A row's line is built from these directly, with
 * no array of cells between (appends, and the write-ahead log, spend most of their time here).
 */
export function copyFieldEncoder(type: ColumnType): (value: unknown, column: string) => string {
  const encode: Encoder = ENCODERS[type];
  if (COPY_SAFE.has(type))
    return (value, column) => (value === null || value === undefined ? "\\N" : encode(value, column));
  return (value, column) => (value === null || value === undefined ? "\\N" : copyField(encode(value, column)));
}

/** The text form of `value` for a column of `type`; null and undefined are SQL NULL. */
export function encodeValue(type: ColumnType, value: unknown, column: string): string | null {
  if (value === null || value === undefined) return null;
  return ENCODERS[type](value, column);
}

// Two expressions: a global one's test() would carry lastIndex from one call to the next.
const NEEDS_ESCAPE = /[\\\n\r\t]/;
const COPY_ESCAPES = /[\\\n\r\t]/g;
const COPY_ESCAPE: Record<string, string> = { "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** One line of COPY's text format: the fields, escaped, joined by tabs. */
export function copyLine(cells: readonly (string | null)[]): string {
  let line = copyField(cells[0] as string | null);
  for (let c = 1; c < cells.length; c++) line += `\t${copyField(cells[c] as string | null)}`;
  return line;
}

/** One field of COPY's text format: `\N` for NULL, backslash, newline, carriage return and tab escaped. */
export function copyField(value: string | null): string {
  if (value === null) return "\\N";
  return NEEDS_ESCAPE.test(value) ? value.replace(COPY_ESCAPES, (c) => COPY_ESCAPE[c] as string) : value;
}

const COPY_UNESCAPE: Record<string, string> = { "\\\\": "\\", "\\n": "\n", "\\r": "\r", "\\t": "\t" };

/** The fields of one line {@link copyField} built (for a dead letter, which shows what would have been written). */
export function parseCopyLine(line: string): (string | null)[] {
  return line
    .split("\t")
    .map((field) =>
      !field.includes("\\")
        ? field
        : field === "\\N"
          ? null
          : field.replace(/\\[\\nrt]/g, (e) => COPY_UNESCAPE[e] as string),
    );
}
