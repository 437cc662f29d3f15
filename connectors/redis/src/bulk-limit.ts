/**
 * Redis refuses a bulk string (a key, a value, a script argument) longer than its
 * `proto-max-bulk-len`, and closes the connection, so the failure would name neither the record
 * nor the setting. The sinks read the setting at open and refuse a longer value at the write.
 */
import type { RedisConnection } from "./redis-connection.ts";

/** Redis' default `proto-max-bulk-len`: 512 MB. */
export const DEFAULT_MAX_BULK_BYTES = 512 * 1024 * 1024;

/**
 * The server's `proto-max-bulk-len` in bytes. Where CONFIG is refused (many managed services),
 * or a Cluster's masters disagree, Redis' default: a longer value then fails at the server.
 */
export async function maxBulkBytesOf(connection: RedisConnection): Promise<number> {
  const value = Number(await connection.configGet("proto-max-bulk-len"));
  return Number.isSafeInteger(value) && value > 0 ? value : DEFAULT_MAX_BULK_BYTES;
}

/**
 * Throws if a string argument is longer than `maxBytes` in UTF-8. A string's UTF-8 form is at
 * most three bytes per UTF-16 unit, so only strings longer than a third of the limit are measured.
 */
export function checkBulkLength(argument: string | number, maxBytes: number, what: string): void {
  if (typeof argument !== "string" || argument.length <= maxBytes / 3) return;
  const bytes = Buffer.byteLength(argument);
  if (bytes > maxBytes)
    throw new Error(`${what} is ${bytes} bytes, above the server's proto-max-bulk-len (${maxBytes} bytes)`);
}
