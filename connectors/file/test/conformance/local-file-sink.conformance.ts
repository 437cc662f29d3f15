/**
 * The local file sink's conformance definition. The suite's child process loads this
 * module for `createSink`; the test process uses `definition`. The guarantee and
 * capabilities are the sink's own (FileSink declares them); the suite reads them there.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import type { ConformanceDefinition, ConformanceRecord, SinkFactoryContext } from "@exactly/conformance";
import { localFileSink } from "../../src/index.ts";
import { idCountsInFiles, listOutput } from "../helpers.ts";

const outDir = (dir: string) => join(dir, "out");

export function createSink(context: SinkFactoryContext) {
  return localFileSink<ConformanceRecord>({
    directory: outDir(context.scope.dir),
    // Two buckets, so a transaction spans several part files.
    bucketAssigner: (r) => `bucket-${r.id % 2}`,
  });
}

export const definition: ConformanceDefinition = {
  name: "local file sink",
  sinkModule: new URL(import.meta.url),
  async readCommitted(scope) {
    const dir = outDir(scope.dir);
    if (!(await readdir(scope.dir)).includes("out")) return [];
    const counts = await idCountsInFiles((await listOutput(dir)).visible);
    return [...counts].flatMap(([id, n]) => Array<number>(n).fill(id));
  },
  async probeLingering(scope) {
    if (!(await readdir(scope.dir)).includes("out")) return [];
    return (await listOutput(outDir(scope.dir))).hidden;
  },
};
