/**
 * What the write-ahead sink applies: Redis writes that are not idempotent on their own
 * (counters, list pushes, set adds, stream entries) and plain sets. Each record maps to one
 * or more operations; they are checked and encoded when the record arrives, so a record that
 * cannot be written fails at once, naming its position, and not at the commit.
 */

export type RedisOperation =
  | { readonly op: "incrBy"; readonly key: string; readonly by: number }
  | { readonly op: "hIncrBy"; readonly key: string; readonly field: string; readonly by: number }
  | { readonly op: "rPush" | "lPush"; readonly key: string; readonly values: readonly (string | number)[] }
  | { readonly op: "sAdd"; readonly key: string; readonly members: readonly (string | number)[] }
  | { readonly op: "zAdd"; readonly key: string; readonly score: number; readonly member: string }
  | { readonly op: "xAdd"; readonly key: string; readonly fields: Readonly<Record<string, string | number>> }
  | { readonly op: "set"; readonly key: string; readonly value: string | number }
  | { readonly op: "hSet"; readonly key: string; readonly fields: Readonly<Record<string, string | number>> };

import type { ReservedNames } from "./key-names.ts";

/** An operation as logged: the Redis command, its key (after the prefix) and its arguments. */
export type EncodedOperation = readonly [command: string, key: string, ...args: (string | number)[]];

function integer(by: number, what: string): number {
  if (!Number.isSafeInteger(by)) throw new Error(`${what} ${by} is not an integer below 2^53`);
  return by;
}

function nonEmpty<V>(values: readonly V[], what: string): readonly V[] {
  if (!Array.isArray(values) || values.length === 0) throw new Error(`${what} needs at least one value`);
  return values;
}

function pairs(fields: Readonly<Record<string, string | number>>, what: string): (string | number)[] {
  const args: (string | number)[] = [];
  for (const [field, value] of Object.entries(fields ?? {})) {
    if (typeof value !== "string" && typeof value !== "number")
      throw new Error(`${what} field ${JSON.stringify(field)}: ${String(value)} is not a string or number`);
    args.push(field, value);
  }
  if (args.length === 0) throw new Error(`${what} needs at least one field`);
  return args;
}

function encode(operation: RedisOperation): EncodedOperation {
  const key = operation?.key;
  if (typeof key !== "string" || key.length === 0) throw new Error("an operation's key must be a non-empty string");
  switch (operation.op) {
    case "incrBy":
      return ["INCRBY", key, integer(operation.by, "incrBy")];
    case "hIncrBy":
      return ["HINCRBY", key, operation.field, integer(operation.by, "hIncrBy")];
    case "rPush":
      return ["RPUSH", key, ...nonEmpty(operation.values, "rPush")];
    case "lPush":
      return ["LPUSH", key, ...nonEmpty(operation.values, "lPush")];
    case "sAdd":
      return ["SADD", key, ...nonEmpty(operation.members, "sAdd")];
    case "zAdd":
      if (!Number.isFinite(operation.score)) throw new Error(`zAdd score ${operation.score} is not finite`);
      return ["ZADD", key, operation.score, operation.member];
    case "xAdd":
      return ["XADD", key, "*", ...pairs(operation.fields, "xAdd")];
    case "set":
      return ["SET", key, operation.value];
    case "hSet":
      return ["HSET", key, ...pairs(operation.fields, "hSet")];
    default:
      throw new Error(`unknown operation ${JSON.stringify((operation as { op?: unknown }).op)}`);
  }
}

/**
 * Checks and encodes the operations of the sinks under one prefix: their types (above) and
 * their keys against the reserved names (see `key-names.ts`). Throws for an operation that
 * cannot be written.
 */
export class OperationEncoder {
  private readonly names: ReservedNames;

  constructor(names: ReservedNames) {
    this.names = names;
  }

  encode(operation: RedisOperation): EncodedOperation {
    const encoded = encode(operation);
    const reserved = this.names.check(encoded[1]);
    if (reserved !== undefined) throw new Error(reserved);
    return encoded;
  }
}
