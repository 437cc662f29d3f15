/**
 * What the Redis sinks check against the server at open, before any write (I7). The PING that
 * turns a refused login into a `ConfigurationError` is the adapter's (`ioredis/`), and the
 * server's `proto-max-bulk-len` is read beside the check that uses it (`bulk-limit.ts`).
 *
 * Durability: the guarantee holds only if a write the server acknowledged survives a crash
 * of the server. With `appendonly no` a crash loses everything since the last snapshot; with
 * `appendfsync everysec` (Redis' default once AOF is on) about the last second; either loss
 * can fall on writes of a checkpoint that has completed, which the job will never write again.
 * Only `appendonly yes` with `appendfsync always` loses nothing acknowledged.
 */
import { ConfigurationError } from "@exactly/core";
import type { RedisConnection } from "./redis-connection.ts";

export async function checkDurability(connection: RedisConnection, optOut: string): Promise<void> {
  const appendonly = await connection.configGet("appendonly");
  const appendfsync = await connection.configGet("appendfsync");
  const how = `set \`appendonly yes\` and \`appendfsync always\` on the server, or set ${optOut}: true to accept the loss (see the guide)`;
  if (appendonly === undefined || appendfsync === undefined) {
    throw new ConfigurationError(
      "appendfsync",
      `not checked: the server refused CONFIG GET, so whether acknowledged writes survive a crash is unknown; ${how}`,
    );
  }
  if (appendonly !== "yes") {
    throw new ConfigurationError(
      "appendonly",
      `is "${appendonly}": a crash of the server loses every write since its last snapshot, including writes of completed checkpoints; ${how}`,
    );
  }
  if (appendfsync !== "always") {
    throw new ConfigurationError(
      "appendfsync",
      `is "${appendfsync}": a crash of the server can lose the last second of acknowledged writes, including writes of completed checkpoints; ${how}`,
    );
  }
}
