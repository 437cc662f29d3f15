// `exactly inspect` on a file-system checkpoint location a real job wrote: every checkpoint,
// complete or not, the sources' positions and the sinks' pending transactions.

import { mkdir, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileSystemCheckpointStorage, GeneratorSource, StreamJob, silentLogger } from "@exactly/core";
import { localFileSink } from "@exactly/file";
import { runExactly } from "@exactly/testkit/run-cli";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type CheckpointReport, formatPositions } from "../src/inspect/inspect-command.ts";

const RECORDS = 20_000;

afterEach(() => {
  vi.restoreAllMocks();
});

/** A bounded job run to its end: its last checkpoint is the final one, its transaction pending in the state. */
async function runJob(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "exactly-inspect-"));
  const job = new StreamJob({
    name: "inspect-test",
    parallelism: 2,
    // Every checkpoint kept: the ones that carried records are the ones whose sinks hold pending work.
    checkpoint: {
      storage: new FileSystemCheckpointStorage(join(dir, "checkpoints"), { retained: 1000 }),
      intervalMs: 50,
    },
    logger: silentLogger,
  });
  job
    .fromSource(
      new GeneratorSource({
        name: "ids",
        count: RECORDS,
        splits: 4,
        ratePerSecond: 40_000,
        generate: (id) => ({ id }),
      }),
    )
    .sinkTo(() => localFileSink<{ id: number }>({ directory: join(dir, "out") }), { name: "files" });
  await job.execute();
  return join(dir, "checkpoints");
}

describe("exactly inspect", () => {
  it("shows a source's positions readably: a few on one line, many one per line and counted past 20", () => {
    expect(formatPositions("  source s/0", { "orders-1": 7, "orders-0": 12 })).toEqual([
      "  source s/0: orders-0 at 12, orders-1 at 7",
    ]);
    const partitions = Object.fromEntries(Array.from({ length: 64 }, (_, p) => [`clicks-${p}`, 1_000_000 + p]));
    const lines = formatPositions("  source kafka/0", partitions);
    expect(lines[0]).toBe("  source kafka/0: 64 positions");
    expect(lines[1]).toBe("      clicks-0   1000000");
    expect(lines[10]).toBe("      clicks-9   1000009");
    expect(lines[11]).toBe("      clicks-10  1000010");
    expect(lines).toHaveLength(22);
    expect(lines.at(-1)).toBe("      … and 44 more (exactly inspect --json lists every one)");
    expect(formatPositions("  source x/0", { nested: { deep: "x".repeat(400) } })[0]).toMatch(
      /^ {2}source x\/0: \{"nested".{190,}… \(--json shows it whole\)$/,
    );
  });

  it("lists every checkpoint, the sources' positions and the sinks' pending transactions", async () => {
    const location = await runJob();
    // A checkpoint begun and never completed (the job died before its metadata).
    await mkdir(join(location, "chk-1000"));
    const reports = JSON.parse((await runExactly("inspect", location, "--json")).join("\n")) as CheckpointReport[];
    const last = reports.at(-1) as CheckpointReport;
    expect(last).toMatchObject({ checkpointId: 1000, complete: false, completedAt: null, sizeBytes: null });
    const final = reports.at(-2) as CheckpointReport;
    expect(final.complete).toBe(true);
    expect(final.final).toBe(true);
    expect(final.sizeBytes).toBeGreaterThan(0);
    // Whose it is (I10): the job's identity, and every stage's uid and kind.
    expect(final.job).toEqual({ name: "inspect-test", id: "inspect-test" });
    expect(final.stages).toEqual([
      { uid: "source:ids", kind: "source", parallelism: 2 },
      { uid: "files", kind: "sink", parallelism: 2 },
    ]);
    expect(Date.parse(final.completedAt as string)).toBeGreaterThan(Date.now() - 60_000);
    // The sources read everything: each split's next index is past the end.
    expect(final.sources.map((s) => `${s.stage}/${s.subtask}`).sort()).toEqual(["source:ids/0", "source:ids/1"]);
    const positions = Object.assign({}, ...final.sources.map((s) => s.positions)) as Record<string, number>;
    expect(Object.keys(positions).sort()).toEqual(["0", "1", "2", "3"]);
    for (const next of Object.values(positions)) expect(next).toBeGreaterThanOrEqual(RECORDS);
    expect(final.sinks.map((s) => `${s.stage}/${s.subtask}`).sort()).toEqual(["files/0", "files/1"]);
    // A sink's state lists what was pre-committed by then and not known committed: never a
    // later checkpoint. A checkpoint that carried records to a subtask lists its own
    // transaction (committed only after it completes); every record was carried by one.
    let pendingRecords = 0;
    for (const checkpoint of reports.filter((r) => r.complete)) {
      for (const sink of checkpoint.sinks) {
        for (const p of sink.pending) {
          expect(p.checkpointId).toBeLessThanOrEqual(checkpoint.checkpointId);
          expect(p.ageSeconds).toBeGreaterThanOrEqual(0);
          expect(p.records).toBeGreaterThan(0);
          if (p.checkpointId === checkpoint.checkpointId) pendingRecords += p.records as number;
        }
      }
    }
    expect(pendingRecords).toBe(RECORDS);
    const text = (await runExactly("inspect", location)).join("\n");
    expect(text).toContain(`latest complete: ${final.checkpointId}`);
    expect(text).toContain("job inspect-test (id inspect-test): only a job of this id restores it");
    expect(text).toContain("stages: source:ids (source, parallelism 2), files (sink, parallelism 2)");
    expect(text).toMatch(/1000\s+-\s+-\s+incomplete/);
    // The job ended cleanly: its final checkpoint's transactions were committed before it did,
    // and the storage recorded that; the checkpoints before it say nothing of the kind.
    expect(final.committed).toBe(true);
    expect(final.sinks.flatMap((s) => s.pending).every((p) => p.committed)).toBe(true);
    expect(reports.filter((r) => r.committed).map((r) => r.checkpointId)).toEqual([final.checkpointId]);
    expect(text).toMatch(/complete, final, committed/);
    // Its own transaction, if the final checkpoint carried records to the subtask, is committed.
    expect(text).toMatch(/sink files\/0: (1 committed: checkpoint \d+|nothing pending)/);
    expect(text).not.toMatch(/\d+ pending/);
  });

  it("of a job run as groups: each group's checkpoints under its name", async () => {
    const dir = await mkdtemp(join(tmpdir(), "exactly-inspect-groups-"));
    const root = new FileSystemCheckpointStorage(dir);
    for (const [group, checkpointId] of [
      ["upstream", 3],
      ["downstream", 5],
    ] as const) {
      const folder = root.scoped(`group-${group}`);
      await folder.beginCheckpoint(checkpointId);
      const { handle } = await folder.writeTaskState(checkpointId, "out/0", { pending: [] });
      await folder.completeCheckpoint({
        checkpointId,
        timestamp: Date.now(),
        jobName: "clicks",
        job: { name: "clicks", id: "clicks", group },
        stages: { out: { parallelism: 1, kind: "sink" } },
        maxParallelism: 128,
        taskStates: { "out/0": handle },
      });
    }
    const [json] = await runExactly("inspect", dir, "--json");
    const read = JSON.parse(json as string) as { groups: Record<string, CheckpointReport[]> };
    expect(Object.keys(read.groups)).toEqual(["downstream", "upstream"]);
    expect(read.groups.upstream?.map((c) => [c.checkpointId, c.job])).toEqual([
      [3, { name: "clicks", id: "clicks", group: "upstream" }],
    ]);
    expect(read.groups.downstream?.map((c) => c.checkpointId)).toEqual([5]);
    const text = (await runExactly("inspect", dir)).join("\n");
    expect(text).toContain("group downstream:");
    expect(text).toContain(`group-upstream`);
  });

  it("says where checkpoints usually are, and exits 1, at a directory that holds none", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-inspect-empty-"));
    await mkdir(join(out, ".checkpoints"));
    const lines = await runExactly("inspect", out);
    const code = process.exitCode;
    process.exitCode = undefined;
    expect(lines.join("\n")).toContain(`no checkpoints at ${out}`);
    expect(lines.join("\n")).toContain(
      `${join(out, ".checkpoints")} is there: exactly inspect ${join(out, ".checkpoints")}`,
    );
    expect(lines.join("\n")).toContain("exactly demo keeps them in <its --out>/.checkpoints");
    expect(code).toBe(1);
  });

  it("refuses a location that is not a directory, naming it, rather than create it", async () => {
    const missing = join(tmpdir(), "exactly-no-such-location");
    await expect(runExactly("inspect", missing)).rejects.toThrow(`${missing} is not a directory`);
  });
});
