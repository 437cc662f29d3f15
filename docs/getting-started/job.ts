// job.ts: 100,000 generated orders, written exactly once as JSON-line part files in ./out,
// checkpointed to ./checkpoints every second. `exactly run job.ts` runs it.

import { GeneratorSource, type JobRuntime, StreamJob } from "@exactly/core";
import { localFileSink } from "@exactly/file";

interface Order {
  id: number;
  customer: string;
  cents: number;
}

export default function buildJob({ logger, metrics }: JobRuntime): StreamJob {
  const job = new StreamJob({
    name: "orders",
    parallelism: 2,
    checkpoint: { storage: "./checkpoints", intervalMs: 1000 },
    logger,
    metrics,
  });
  job
    .fromSource(
      new GeneratorSource({
        name: "orders",
        count: 100_000,
        ratePerSecond: 50_000,
        generate: (id): Order => ({ id, customer: `c${id % 100}`, cents: (id * 7) % 10_000 }),
      }),
    )
    .sinkTo(() => localFileSink<Order>({ directory: "./out", partSuffix: ".jsonl" }), { name: "orders-out" });
  return job;
}
