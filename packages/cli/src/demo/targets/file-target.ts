/**
 * `exactly demo` (`--sink file`, the default): rolling JSON-line part files in the output
 * directory, next to the hidden checkpoint folder; the check reads every visible file.
 */
import { localFileSink } from "@exactly/file";
import { demoRecordLine } from "../demo-record.ts";
import { verifyOutput } from "../verify-output.ts";
import type { DemoTarget } from "./demo-target.ts";

export const fileTarget: DemoTarget<Record<string, never>> = {
  sink: "file",
  flags: [],
  settings: () => ({}),
  identity: () => ({}),
  prepare: async () => {},
  sinks: async (_settings, run) => ({
    "demo-files": () =>
      localFileSink({ directory: run.out, partSuffix: ".jsonl", guarantee: run.guarantee, encoder: demoRecordLine }),
  }),
  verify: async (_settings, run) => ({ check: await verifyOutput(run.out, run.records), leftOpen: 0, fields: {} }),
  // The longest line of the run, its newline included: ids, keys and seqs only grow.
  outBytesPerRecord: ({ records, keys }) =>
    Buffer.byteLength(demoRecordLine({ id: records - 1, key: keys - 1, seq: Math.ceil(records / keys) })) + 1,
  rows: (s) => [["output", s.out]],
};
