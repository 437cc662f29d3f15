import type { RedisConnectionOptions } from "./ioredis/ioredis-connection.ts";

/** What every Redis sink takes, whatever its guarantee: where to connect, under which prefix, and how lossy a server it accepts. */
export interface RedisSinkCommonOptions {
  /** A `redis://` URL, or ioredis options. Credentials are never logged. */
  readonly connection: RedisConnectionOptions;
  /** Every key starts with it (non-empty). */
  readonly keyPrefix: string;
  /**
   * Start on a server that can lose acknowledged writes in a crash (`appendonly no`, or
   * `appendfsync` other than `always`, or CONFIG refused). Default false: such a server is refused.
   */
  readonly acceptLossyDurability?: boolean;
}
