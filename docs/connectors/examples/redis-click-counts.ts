// Page-view counts and a click stream in Redis, exactly once through the write-ahead sink:
// `node redis-click-counts.ts [count]` with REDIS_URL set. A test installs @exactly/core and
// @exactly/redis alone from their tarballs, runs this file against a real server and checks
// the counts and the stream's length.
import { GeneratorSource, StreamJob } from "@exactly/core";
import { RedisWriteAheadSink } from "@exactly/redis";

interface Click {
  page: string;
  user: string;
}

const count = Number(process.argv[2] ?? 10_000);
const job = new StreamJob({
  name: "click-counts",
  checkpoint: { storage: "./checkpoints/click-counts", intervalMs: 500 },
});
const clicks = job.fromSource(
  new GeneratorSource<Click>({ name: "clicks", count, generate: (i) => ({ page: `/p${i % 10}`, user: `u${i}` }) }),
);

// #region sink
clicks.sinkTo(
  () =>
    new RedisWriteAheadSink<Click>({
      connection: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
      keyPrefix: "clicks:", // on a Redis Cluster, a hash tag: "{clicks}:"
      operations: (c) => [
        { op: "hIncrBy", key: "per-page", field: c.page, by: 1 },
        { op: "xAdd", key: "stream", fields: { page: c.page, user: c.user } },
      ],
    }),
  { name: "click-counts" },
);
// #endregion sink

const result = await job.execute();
console.log(JSON.stringify({ checkpointsCompleted: result.checkpointsCompleted }));
