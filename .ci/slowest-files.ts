// Prints what each test file cost in a CI run, from vitest's JSON report: the ten slowest files
// and the time from the first file's start to the last one's end. With `--write <file>` it also
// writes every file of 10 s or more with its seconds, the table test/longest-first-sequencer.ts
// orders files by.
import { readFileSync, writeFileSync } from "node:fs";
import { relative } from "node:path";
import { parseArgs } from "node:util";

interface JsonReport {
  readonly testResults: readonly { readonly name: string; readonly startTime: number; readonly endTime: number }[];
}

const { positionals, values } = parseArgs({ allowPositionals: true, options: { write: { type: "string" } } });
const report = JSON.parse(readFileSync(positionals[0] ?? "", "utf8")) as JsonReport;
const files = report.testResults
  .map((r) => ({ file: relative(process.cwd(), r.name), seconds: (r.endTime - r.startTime) / 1000 }))
  .sort((a, b) => b.seconds - a.seconds);
const start = Math.min(...report.testResults.map((r) => r.startTime));
const end = Math.max(...report.testResults.map((r) => r.endTime));
console.log(`vitest: ${files.length} files in ${((end - start) / 1000).toFixed(0)} s; the ten slowest:`);
for (const { file, seconds } of files.slice(0, 10)) console.log(`${seconds.toFixed(0).padStart(6)} s  ${file}`);
if (values.write !== undefined) {
  const slow = files.filter((f) => f.seconds >= 10).map((f) => [f.file, Math.round(f.seconds)] as const);
  writeFileSync(values.write, `${JSON.stringify(Object.fromEntries(slow), null, 2)}\n`);
  console.log(`wrote ${slow.length} files' seconds to ${values.write}`);
}
