import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { idCounts, listOutput, runFixture } from "./helpers.ts";

const job = fileURLToPath(new URL("./fixtures/crash-job.ts", import.meta.url));
const RECORDS = 20_000;

/** Each case: the faults armed in successive runs before a final clean run. */
const cases: Array<{ name: string; faults: string[] }> = [
  { name: "after begin", faults: ["after-begin@3"] },
  { name: "mid-write", faults: ["mid-write@7"] },
  { name: "after pre-commit", faults: ["after-pre-commit@3"] },
  { name: "after the checkpoint is durable, before commit", faults: ["after-checkpoint-durable@2"] },
  { name: "mid-commit (published, in-progress file not yet removed)", faults: ["mid-commit@3"] },
  { name: "during recovery commit", faults: ["after-checkpoint-durable@2", "during-recovery-commit@1"] },
  { name: "during lingering abort", faults: ["mid-write@9", "during-lingering-abort@2"] },
  { name: "twice in a row at different phases", faults: ["after-pre-commit@4", "mid-write@12"] },
];

describe("local file sink under SIGKILL", () => {
  it.each(cases)("recovers from a crash $name with nothing lost, duplicated or left behind", async ({ faults }) => {
    const out = await mkdtemp(join(tmpdir(), "exactly-file-crash-"));
    const env = { CRASH_OUT: out, CRASH_RECORDS: String(RECORDS) };
    for (const fault of faults) {
      const run = await runFixture(job, { ...env, EXACTLY_FAULT: fault });
      expect(run.signal, `run with ${fault} should die by SIGKILL; stderr: ${run.stderr}`).toBe("SIGKILL");
    }
    const last = await runFixture(job, env);
    expect(last.code, last.stderr).toBe(0);

    const { visible, hidden } = await listOutput(out);
    expect(hidden, "no in-progress file may remain (I4)").toEqual([]);
    const counts = await idCounts(visible);
    const lost = [];
    const duplicated = [];
    for (let id = 0; id < RECORDS; id++) {
      const n = counts.get(id) ?? 0;
      if (n === 0) lost.push(id);
      if (n > 1) duplicated.push(id);
    }
    expect(lost.length, `lost ids, first: ${lost.slice(0, 5)}`).toBe(0);
    expect(duplicated.length, `duplicated ids, first: ${duplicated.slice(0, 5)}`).toBe(0);
    expect(counts.size).toBe(RECORDS);
  });
});
