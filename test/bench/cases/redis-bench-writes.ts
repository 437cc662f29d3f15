/**
 * What the Redis cases write, on the single server and on the Cluster alike (the same records
 * to the same keys through the same job, so the two suites compare), and how a case deletes
 * it afterwards.
 */
import { join } from "node:path";
import { GeneratorSource, type SinkFactory, StreamJob, silentLogger } from "@exactly/core";
import type { Redis } from "ioredis";
import { benchRecord, executeAndReport, pace } from "../bench-protocol.ts";

export type BenchRecord = ReturnType<typeof benchRecord>;

/** The upsert cases' key of a record: 100,000 keys, each written many times. */
export const upsertKey = (r: BenchRecord) => String(r.id % 100_000);

/** The increment cases' hash and field of a record: 1,000 hashes of 100 fields. */
export const counter = (r: BenchRecord) => ({
  hash: `counts:${r.id % 1000}`,
  field: `f${Math.floor(r.id / 1000) % 100}`,
});

/** The increment cases' operation: one HINCRBY of the record's counter. */
export const increment = (r: BenchRecord) => {
  const { hash, field } = counter(r);
  return { op: "hIncrBy" as const, key: hash, field, by: 1 };
};

/** The upsert sink's mapping of a record: its key, its id as the version, its payload as the value. */
export const upsertMapping = {
  key: upsertKey,
  version: (r: BenchRecord) => r.id,
  value: { shape: "string" as const, of: (r: BenchRecord) => r.payload },
};

/** The benchmark job into a Redis sink: generated records, 1 s checkpoints, reported. */
export async function runSinkJob(
  name: string,
  dir: string,
  records: number,
  sink: SinkFactory<BenchRecord>,
): Promise<void> {
  const job = new StreamJob({
    name: `bench-${name}`,
    checkpoint: { storage: join(dir, "checkpoints"), intervalMs: 1000 },
    logger: silentLogger,
  });
  job
    .fromSource(new GeneratorSource({ count: records, ...pace, generate: benchRecord }))
    .sinkTo(sink, { name: "redis-out" });
  await executeAndReport(job, records);
}

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
