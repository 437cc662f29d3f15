/**
 * The local file sinks' conformance definitions: the exactly-once sink (FileTwoPhaseSink) and
 * the at-least-once one (FileAtLeastOnceSink). The suite's child process loads this module for
 * `createSink`; the test process uses the definitions. The guarantee and capabilities are the
 * sinks' own; the suite reads them there.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import type { ConformanceDefinition, ConformanceRecord, SinkFactoryContext } from "@exactly/conformance";
import { DeliveryGuarantee } from "@exactly/core";
import { localFileSink } from "../../src/index.ts";
import { idCountsInFiles, listOutput } from "../helpers.ts";

interface LocalFileConformanceOptions {
  readonly guarantee?: DeliveryGuarantee;
}

const outDir = (dir: string) => join(dir, "out");

export function createSink(context: SinkFactoryContext<LocalFileConformanceOptions>) {
  return localFileSink<ConformanceRecord>({
    directory: outDir(context.scope.dir),
    // Two buckets, so a transaction spans several part files.
    bucketAssigner: (r) => `bucket-${r.id % 2}`,
    guarantee: context.options?.guarantee ?? DeliveryGuarantee.EXACTLY_ONCE,
  });
}

function localFileDefinition(guarantee: DeliveryGuarantee): ConformanceDefinition<LocalFileConformanceOptions> {
  return {
    name: guarantee === DeliveryGuarantee.EXACTLY_ONCE ? "local file sink" : `local file sink (${guarantee})`,
    sinkModule: new URL(import.meta.url),
    sinkOptions: { guarantee },
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
}

export const definition = localFileDefinition(DeliveryGuarantee.EXACTLY_ONCE);
export const atLeastOnceDefinition = localFileDefinition(DeliveryGuarantee.AT_LEAST_ONCE);
