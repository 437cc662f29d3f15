// A job module as `exactly run` takes it: `exactly run job-module.ts` in a directory of its own.
// packages/cli/test/run-command.test.ts runs this file, stops it with SIGTERM and checks that
// the output is exactly what the final checkpoint read.
// #region job-module
import { GeneratorSource, type JobRuntime, StreamJob } from "@exactly/core";
import { localFileSink } from "@exactly/file";

export default function buildJob({ logger, metrics }: JobRuntime): StreamJob {
  const job = new StreamJob({
    name: "ids",
    parallelism: 2,
    checkpoint: { storage: "./checkpoints", intervalMs: 200 },
    logger,
    metrics,
  });
  job
    .fromSource(new GeneratorSource({ name: "ids", splits: 4, ratePerSecond: 20_000, generate: (id) => ({ id }) }))
    .sinkTo(() => localFileSink<{ id: number }>({ directory: "./out", partSuffix: ".jsonl" }), { name: "files" });
  return job;
}
// #endregion job-module
