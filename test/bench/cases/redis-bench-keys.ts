/**
 * What the Redis cases write, on the single server and on the Cluster alike (the same records
 * to the same keys, so the two suites compare), and how a case deletes it afterwards.
 */
import type { Redis } from "ioredis";
import type { benchRecord } from "../bench-protocol.ts";

export type BenchRecord = ReturnType<typeof benchRecord>;

/** The upsert cases' key of a record: 100,000 keys, each written many times. */
export const upsertKey = (r: BenchRecord) => String(r.id % 100_000);

/** The increment cases' hash and field of a record: 1,000 hashes of 100 fields. */
export const counter = (r: BenchRecord) => ({
  hash: `counts:${r.id % 1000}`,
  field: `f${Math.floor(r.id / 1000) % 100}`,
});

/**
 * Deletes the keys matching `pattern` on one server or one Cluster master, one UNLINK per key
 * in a pipeline: an UNLINK of keys in several slots would be refused (CROSSSLOT).
 */
export async function unlinkMatching(client: Redis, pattern: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await client.scan(cursor, "MATCH", pattern, "COUNT", 5000);
    if (keys.length > 0) {
      const pipeline = client.pipeline();
      for (const key of keys) pipeline.unlink(key);
      await pipeline.exec();
    }
    cursor = next;
  } while (cursor !== "0");
}
