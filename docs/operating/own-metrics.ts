// A program of one's own that serves the job's metrics on /metrics, as `exactly run` does:
// `METRICS_PORT=9464 node own-metrics.ts` in a directory of its own.
// packages/cli/test/metrics.test.ts runs this file and scrapes it while the job runs.
// #region own-metrics
import { PrometheusMetrics, serveMetrics } from "@exactly/cli";
import { GeneratorSource, StreamJob } from "@exactly/core";
import { localFileSink } from "@exactly/file";

const metrics = new PrometheusMetrics("orders-to-files");
await serveMetrics(metrics, Number(process.env.METRICS_PORT ?? 9464));
const job = new StreamJob({
  name: "orders-to-files",
  checkpoint: { storage: "./checkpoints", intervalMs: 500 },
  metrics,
});
// #endregion own-metrics
job
  .fromSource(new GeneratorSource({ name: "orders", count: 60_000, ratePerSecond: 10_000, generate: (id) => ({ id }) }))
  .sinkTo(() => localFileSink<{ id: number }>({ directory: "./out" }), { name: "files" });
await job.execute();
