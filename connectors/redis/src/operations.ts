/**
 * What the write-ahead sink applies: Redis writes that are not idempotent on their own
 * (counters, list pushes, set adds, stream entries) and plain sets. Each record maps to one
 * or more operations; they are checked and encoded when the record arrives, so a record that
 * cannot be written fails at once, naming its position, and not at the commit.
 *
 * Every key, field, member and value is checked, since Redis would store anything else as its
 * text ("", "NaN", "[object Object]"): keys, fields and zAdd members are strings; values,
 * list values and set members are strings or finite numbers; increments are integers below
 * 2^53; scores are finite; strings have a UTF-8 form (no lone surrogate). Binary values
 * (Buffers) are not supported: the log holds JSON.
 */
import { checkBulkLength, DEFAULT_MAX_BULK_BYTES } from "./bulk-limit.ts";
import type { ReservedNames } from "./key-names.ts";
import { hasUtf8Form, NO_UTF8_FORM } from "./strings.ts";

export type RedisOperation =
  | { readonly op: "incrBy"; readonly key: string; readonly by: number }
  | { readonly op: "hIncrBy"; readonly key: string; readonly field: string; readonly by: number }
  | { readonly op: "rPush" | "lPush"; readonly key: string; readonly values: readonly (string | number)[] }
  | { readonly op: "sAdd"; readonly key: string; readonly members: readonly (string | number)[] }
  | { readonly op: "zAdd"; readonly key: string; readonly score: number; readonly member: string }
  | { readonly op: "xAdd"; readonly key: string; readonly fields: Readonly<Record<string, string | number>> }
  | { readonly op: "set"; readonly key: string; readonly value: string | number }
  | { readonly op: "hSet"; readonly key: string; readonly fields: Readonly<Record<string, string | number>> };

/** An operation as logged: the Redis command, its key (after the prefix) and its arguments. */
export type EncodedOperation = readonly [command: string, key: string, ...args: (string | number)[]];

/** A value as an error shows it: never its whole text, and never throwing (a Symbol). */
function shown(value: unknown): string {
  if (value === null) return "null";
  if (Buffer.isBuffer(value)) return "a Buffer";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  return String(value);
}

function text(value: unknown, what: string): string {
  if (typeof value !== "string") throw new Error(`${what} ${shown(value)} is not a string`);
  if (!hasUtf8Form(value)) throw new Error(`${what} ${NO_UTF8_FORM}`);
  return value;
}

function isScalar(value: unknown): value is string | number {
  return typeof value === "string" ? hasUtf8Form(value) : typeof value === "number" && Number.isFinite(value);
}

/** Why a value is not a string with a UTF-8 form or a finite number. */
function notScalar(value: unknown): string {
  return typeof value === "string" ? NO_UTF8_FORM : `${shown(value)} is not a string or a finite number`;
}

function scalar(value: unknown, what: string): string | number {
  if (isScalar(value)) return value;
  throw new Error(`${what} ${notScalar(value)}`);
}

function integer(by: unknown, what: string): number {
  if (!Number.isSafeInteger(by)) throw new Error(`${what} ${shown(by)} is not an integer below 2^53`);
  return by as number;
}

function scalars(values: readonly unknown[], what: string): (string | number)[] {
  if (!Array.isArray(values) || values.length === 0) throw new Error(`${what} needs at least one value`);
  for (let i = 0; i < values.length; i++) {
    if (!isScalar(values[i])) throw new Error(`${what} value ${i}: ${notScalar(values[i])}`);
  }
  return values as (string | number)[];
}

function pairs(fields: Readonly<Record<string, unknown>>, what: string): (string | number)[] {
  if (typeof fields !== "object" || fields === null || Buffer.isBuffer(fields))
    throw new Error(`${what} fields ${shown(fields)} are not an object of fields`);
  const args: (string | number)[] = [];
  for (const [field, value] of Object.entries(fields)) {
    if (!hasUtf8Form(field)) throw new Error(`${what} field name ${NO_UTF8_FORM}`);
    if (!isScalar(value)) throw new Error(`${what} field ${shown(field)}: ${notScalar(value)}`);
    args.push(field, value);
  }
  if (args.length === 0) throw new Error(`${what} needs at least one field`);
  return args;
}

function encode(operation: RedisOperation): EncodedOperation {
  if (typeof operation !== "object" || operation === null)
    throw new Error(`operation ${shown(operation)} is not an object`);
  const key = operation.key;
  if (typeof key !== "string" || key.length === 0) throw new Error("an operation's key must be a non-empty string");
  if (!hasUtf8Form(key)) throw new Error(`the operation's key ${NO_UTF8_FORM}`);
  switch (operation.op) {
    case "incrBy":
      return ["INCRBY", key, integer(operation.by, "incrBy")];
    case "hIncrBy":
      return ["HINCRBY", key, text(operation.field, "hIncrBy field"), integer(operation.by, "hIncrBy")];
    case "rPush":
      return ["RPUSH", key, ...scalars(operation.values, "rPush")];
    case "lPush":
      return ["LPUSH", key, ...scalars(operation.values, "lPush")];
    case "sAdd":
      return ["SADD", key, ...scalars(operation.members, "sAdd")];
    case "zAdd":
      if (typeof operation.score !== "number" || !Number.isFinite(operation.score))
        throw new Error(`zAdd score ${shown(operation.score)} is not a finite number`);
      return ["ZADD", key, operation.score, text(operation.member, "zAdd member")];
    case "xAdd":
      return ["XADD", key, "*", ...pairs(operation.fields, "xAdd")];
    case "set":
      return ["SET", key, scalar(operation.value, "set value")];
    case "hSet":
      return ["HSET", key, ...pairs(operation.fields, "hSet")];
    default:
      throw new Error(`unknown operation ${shown((operation as { op?: unknown }).op)}`);
  }
}

/**
 * Checks and encodes the operations of the sinks under one prefix: their types (above), their
 * keys against the reserved names (see `key-names.ts`), and each argument's length against the
 * server's `proto-max-bulk-len` (set at open). Throws for an operation that cannot be written.
 */
export class OperationEncoder {
  private readonly names: ReservedNames;
  /** The server's `proto-max-bulk-len`, read at open. */
  maxBulkBytes = DEFAULT_MAX_BULK_BYTES;

  constructor(names: ReservedNames) {
    this.names = names;
  }

  encode(operation: RedisOperation): EncodedOperation {
    const encoded = encode(operation);
    const reserved = this.names.check(encoded[1]);
    if (reserved !== undefined) throw new Error(reserved);
    const third = this.maxBulkBytes / 3;
    for (let i = 1; i < encoded.length; i++) {
      const argument = encoded[i] as string | number;
      // The label is built only for a string long enough to be measured.
      if (typeof argument === "string" && argument.length > third)
        checkBulkLength(argument, this.maxBulkBytes, i === 1 ? "the key" : `${encoded[0]} argument ${i - 1}`);
    }
    return encoded;
  }
}
