import { mkdtemp, readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runFixture } from "@exactly/testkit/run-fixture";
import { describe, expect, it } from "vitest";
import { event, RECORDS } from "./fixtures/keyed-window-job.ts";

const script = fileURLToPath(new URL("./fixtures/keyed-window-run.ts", import.meta.url));

async function lines<T>(dir: string): Promise<T[]> {
  const out: T[] = [];
  for (const name of await readdir(dir)) {
    if (name.startsWith(".")) continue;
    for (const line of (await readFile(join(dir, name), "utf8")).split("\n")) if (line) out.push(JSON.parse(line));
  }
  return out;
}

/** The windows and sequence numbers an uninterrupted batch computation over the same input gives. */
async function expectBatchResults(out: string): Promise<void> {
  // Batch computation over the same input.
  const expectedWindows = new Map<string, number>();
  const expectedCount = new Map<string, number>();
  for (let id = 0; id < RECORDS; id++) {
    const e = event(id);
    const start = e.ts - (e.ts % 1000);
    const slot = `${e.key}@${start}`;
    expectedWindows.set(slot, (expectedWindows.get(slot) ?? 0) + e.value);
    expectedCount.set(e.key, (expectedCount.get(e.key) ?? 0) + 1);
  }

  const windows = await lines<{ key: string; start: number; end: number; value: number }>(join(out, "windows"));
  const actual = new Map<string, number>();
  for (const w of windows) {
    const slot = `${w.key}@${w.start}`;
    expect(actual.has(slot), `window ${slot} emitted twice`).toBe(false);
    actual.set(slot, w.value);
  }
  expect(actual).toEqual(expectedWindows);

  const seq = await lines<{ id: number; key: string; seq: number }>(join(out, "seq"));
  expect(new Set(seq.map((r) => r.id)).size).toBe(RECORDS);
  expect(seq.length).toBe(RECORDS);
  for (const [key, count] of expectedCount) {
    const seqs = seq
      .filter((r) => r.key === key)
      .map((r) => r.seq)
      .sort((a, b) => a - b);
    expect(seqs, `seq of ${key}`).toEqual(Array.from({ length: count }, (_, i) => i + 1));
  }
}

describe("keyed state and windows across crashes and rescaling", () => {
  // On worker threads, subtask i of every stage runs on worker i mod 2: the source on worker
  // 0 only, so every keyBy edge to an odd subtask crosses threads, barriers with it.
  it.each([
    ["on one event loop", "0"],
    ["on two worker threads", "2"],
  ])("I3: produce the same results as an uninterrupted batch computation, %s", async (_, workers) => {
    const out = await mkdtemp(join(tmpdir(), "exactly-keyed-window-"));
    const runs = [
      { JOB_PARALLELISM: "2", EXACTLY_FAULT: "after-pre-commit@9" },
      { JOB_PARALLELISM: "3", EXACTLY_FAULT: "mid-write@25" },
      { JOB_PARALLELISM: "3", EXACTLY_FAULT: "after-checkpoint-durable@4" },
    ];
    for (const env of runs) {
      const result = await runFixture(script, { JOB_OUT: out, JOB_WORKERS: workers, ...env });
      expect(result.signal, result.stderr).toBe("SIGKILL");
      expect(result.stderr).toContain(workers === "2" ? "running as ThreadedExecution" : "running as LocalExecution");
    }
    const last = await runFixture(script, { JOB_OUT: out, JOB_WORKERS: workers, JOB_PARALLELISM: "1" });
    expect(last.code, last.stderr).toBe(0);

    await expectBatchResults(out);
  });

  it("a failure in one worker thread restarts every worker from the latest checkpoint, with the same results", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-keyed-window-"));
    const run = await runFixture(script, {
      JOB_OUT: out,
      JOB_WORKERS: "2",
      JOB_PARALLELISM: "2",
      JOB_FAIL_ONCE_AT: "5001",
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain("running as ThreadedExecution");
    expect(run.stderr).toContain("restarting after: stage process failed on record");
    expect(run.stderr).toContain("ended after 1 restart(s)");
    await expectBatchResults(out);
  });
});
