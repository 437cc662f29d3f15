/**
 * The port to the server: what the Redis sinks need of a connection, in their own terms. The
 * ioredis client sits behind it, in `ioredis/` (the one folder that imports ioredis), as the
 * Postgres client sits behind `PostgresConnection`. Scripts are named; the adapter loads each
 * once per connection and sends it by SHA (EVALSHA) afterwards, loading it again after a
 * NOSCRIPT (a restarted or flushed server).
 */
import type { ScriptName } from "./lua/scripts.ts";

/** One call of a script: its keys and its arguments, never spliced into the script's text. */
export interface ScriptCall {
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
}

export interface RedisConnection {
  /** Whether this is a Redis Cluster: then every call's keys must share one slot. */
  readonly clustered: boolean;
  /** The Cluster hash slot of a key, as the client routes it; undefined on a single server. */
  slotOf(key: string): number | undefined;
  /**
   * Sends every call pipelined (on a Cluster, one pipeline per master, at once); resolves to
   * their replies in order, or rejects with the first error. Each call's keys share one slot.
   * It sends at once, so a caller may send again before the replies: calls to one server reach
   * it in the order sent, except one the client sends again after a NOSCRIPT, which comes
   * behind the calls sent meanwhile.
   */
  runScript(script: ScriptName, calls: readonly ScriptCall[]): Promise<unknown[]>;
  /**
   * Sends plain commands in one pipeline (the at-least-once sink's writes; each is
   * `[COMMAND, key, …args]` from `encodeOperation`, never user text); rejects with the first error.
   */
  runCommands(commands: readonly (readonly (string | number)[])[]): Promise<void>;
  /** Every key matching `pattern` (SCAN, never KEYS). */
  scanKeys(pattern: string): Promise<string[]>;
  /** `HMGET key field…`. */
  hashFields(key: string, fields: readonly string[]): Promise<(string | null)[]>;
  deleteKeys(keys: readonly string[]): Promise<void>;
  /** `CONFIG GET name`: the value, or undefined when the server refuses CONFIG (many managed services do). */
  configGet(name: string): Promise<string | undefined>;
  close(): Promise<void>;
}

/** Opens a connection; `purpose` becomes its client name (seen in CLIENT LIST). */
export type RedisConnect = (purpose: string) => Promise<RedisConnection>;
