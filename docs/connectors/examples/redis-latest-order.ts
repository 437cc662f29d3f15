// Each customer's latest order in Redis, exactly once by versioned upserts:
// `node redis-latest-order.ts [count]` with REDIS_URL set. A test installs @exactly/core and
// @exactly/redis alone from their tarballs, runs this file against a real server and reads
// every key back.
import { GeneratorSource, StreamJob } from "@exactly/core";
import { RedisUpsertSink } from "@exactly/redis";

interface Order {
  customer: string;
  sequence: number;
  total: number;
}

const count = Number(process.argv[2] ?? 10_000);
const job = new StreamJob({
  name: "latest-order",
  checkpoint: { storage: "./checkpoints/latest-order", intervalMs: 500 },
});
const orders = job.fromSource(
  new GeneratorSource<Order>({
    name: "orders",
    count,
    generate: (i) => ({ customer: `c${i % 100}`, sequence: i, total: i / 4 }),
  }),
);

// #region sink
orders.sinkTo(
  () =>
    new RedisUpsertSink<Order>({
      connection: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
      keyPrefix: "orders:latest:",
      key: (o) => o.customer,
      version: (o) => o.sequence, // the same under replay, increasing along a key's records
      value: { shape: "json" },
    }),
  { name: "latest-order" },
);
// #endregion sink

const result = await job.execute();
console.log(JSON.stringify({ checkpointsCompleted: result.checkpointsCompleted }));
