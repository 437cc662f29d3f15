/**
 * Order totals, the job docs/writing-a-job.md builds step by step: a generator of orders, the
 * cancelled ones filtered out, a running total per customer kept in keyed state, written
 * exactly once to JSON-lines files.
 *
 * It is a job module (a function that builds the job), so the same file runs on one event
 * loop, on worker threads and as shards:
 *
 *   exactly run src/order-totals-job.ts                 (./out and ./checkpoints in the working directory)
 *   exactly run src/order-totals-job.ts --shard 0/2     (with --shard 1/2 beside it)
 *
 * test/guide-jobs.test.ts runs it all three ways through loadJob, which is what `exactly run` calls.
 */
// #region job-module
import { join } from "node:path";
import { GeneratorSource, type JobRuntime, StreamJob, splitPerKey } from "@exactly/core";
import { localFileSink } from "@exactly/file";
import { CUSTOMERS, ORDERS, order } from "./input.ts";

export default function orderTotalsJob({ params, logger, metrics }: JobRuntime): StreamJob {
  // `exactly run` passes no params: the job then works in the current directory.
  const dir = (params.dir as string | undefined) ?? ".";
  const job = new StreamJob({
    name: "order-totals",
    parallelism: 2,
    // Worker threads for the subtasks. Left out: the machine's cores (at most the parallelism).
    ...(params.workers === undefined ? {} : { workers: params.workers as number }),
    checkpoint: { storage: join(dir, "checkpoints"), intervalMs: 200 },
    logger,
    metrics,
  });
  // #endregion job-module

  // #region generator
  const orders = job.fromSource(
    new GeneratorSource({
      name: "orders",
      count: ORDERS,
      // Lane i holds customer i's orders, read by the subtask that owns customer i's key: the
      // input is partitioned by key, which a job run as shards needs.
      splits: CUSTOMERS,
      splitOwner: splitPerKey(job.maxParallelism),
      // Must be deterministic: a replay after a restore calls it again for the same index.
      generate: order,
    }),
  );
  // #endregion generator

  // #region map-filter
  // Stateless steps run inside the source's subtasks: no channel, no copy of the records.
  const placed = orders
    .filter((o) => o.status !== "cancelled")
    .map((o) => ({ orderId: o.id, customer: o.customer, cents: o.cents }));
  // #endregion map-filter

  // #region keyed-process
  const totals = placed
    .keyBy((o) => o.customer)
    .process<CustomerTotal, { orders: number; cents: number }>(
      {
        processElement(o, ctx) {
          // ctx.state is this customer's value, checkpointed with the source's positions: after
          // a crash both go back to the same checkpoint, so no order is counted twice.
          const before = ctx.state.value() ?? { orders: 0, cents: 0 };
          const after = { orders: before.orders + 1, cents: before.cents + o.cents };
          ctx.state.update(after);
          ctx.emit({ customer: ctx.key, orderId: o.orderId, ...after });
        },
      },
      // The name the stage's state is stored under: a later version of the job finds it by this.
      { uid: "customer-totals" },
    );
  // #endregion keyed-process

  // #region sink
  // Exactly once: a checkpoint's part files are published when the checkpoint completes.
  totals.sinkTo(() => localFileSink<CustomerTotal>({ directory: join(dir, "out"), partSuffix: ".jsonl" }), {
    name: "totals",
  });
  // #endregion sink
  return job;
}

/** What the job writes: one line per placed order, with its customer's totals so far. */
export interface CustomerTotal {
  readonly customer: number;
  readonly orderId: number;
  /** The customer's placed orders so far, this one included. */
  readonly orders: number;
  readonly cents: number;
}
