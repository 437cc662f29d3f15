/**
 * Word count over text files: a FileSource reads every file of `<dir>/in` line by line, each
 * file a split whose byte offset is checkpointed; the words are counted per word in keyed state.
 *
 *   exactly run src/word-count-job.ts      (reads ./in; ./counts and ./checkpoints)
 */
import { join } from "node:path";
import { FileSource, type JobRuntime, StreamJob } from "@exactly/core";
import { localFileSink } from "@exactly/file";

/** One line per word read: the word and how often it was read so far. */
export interface WordCount {
  readonly word: string;
  readonly count: number;
}

export default function wordCountJob({ params, logger, metrics }: JobRuntime): StreamJob {
  const dir = (params.dir as string | undefined) ?? ".";
  const job = new StreamJob({
    name: "word-count",
    parallelism: 2,
    ...(params.workers === undefined ? {} : { workers: params.workers as number }),
    checkpoint: { storage: join(dir, "checkpoints"), intervalMs: 200 },
    logger,
    metrics,
  });

  // #region file-source
  job
    // Every file of the directory (in name order, hidden ones skipped) is a split: the subtasks
    // share the files. A record is one line, as a string.
    .fromSource(new FileSource({ name: "text", paths: [join(dir, "in")] }))
    .flatMap((line) => line.toLowerCase().match(/[a-z']+/g) ?? [])
    .keyBy((word) => word)
    .process<WordCount, number>({
      processElement(word, ctx) {
        const count = (ctx.state.value() ?? 0) + 1;
        ctx.state.update(count);
        ctx.emit({ word, count });
      },
    })
    .sinkTo(() => localFileSink<WordCount>({ directory: join(dir, "counts"), partSuffix: ".jsonl" }), {
      name: "counts",
    });
  // #endregion file-source
  return job;
}
