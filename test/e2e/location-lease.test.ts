// One job per checkpoint location at a time, with real processes (docs/design.md §2, Recovery):
// a job that is not sharded holds its location with a lease, as a shard of one. A second job
// on a running job's location, of the same name or not, is refused; a job paused past its
// lease loses the location to its next process and, resumed, completes nothing; a job
// SIGKILLed is taken over by its next process on this machine at once.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileSystemCheckpointStorage } from "@exactly/core";
import { describe, expect, it } from "vitest";
import {
  expectExactOutput,
  expectExactPrefix,
  type Location,
  outputRows,
  type Proc,
  startShard,
  until,
} from "./fixtures/shard-processes.ts";

function locationOf(checkpoints: string): Location {
  return { env: { SHARDED_JOB_CHECKPOINTS: checkpoints }, storage: new FileSystemCheckpointStorage(checkpoints) };
}

async function latestComplete(at: Location): Promise<number> {
  return (await at.storage.listCompleted()).at(-1)?.checkpointId ?? 0;
}

describe("a job's checkpoint location", () => {
  it("a second copy of the job, and another job, started on a running job's location are refused, naming the location and the holder; the running job goes on exact", async () => {
    const first = await mkdtemp(join(tmpdir(), "exactly-location-"));
    const checkpoints = join(first, ".checkpoints");
    const at = locationOf(checkpoints);
    const all: Proc[] = [];
    try {
      const running = startShard(first, at, [], { SHARDED_JOB_RECORDS: "1000000", SHARDED_JOB_LEASE_MS: "1000" });
      all.push(running);
      await until("the running job completed a checkpoint", async () => (await latestComplete(at)) > 0, all);
      // Short runs, each into an output of its own: on a location nobody holds, they would end with their records written.
      const started = await Promise.all(
        ["sharded-seq", "another-job"].map(async (name) => {
          const out = await mkdtemp(join(tmpdir(), "exactly-location-"));
          const p = startShard(out, at, [], {
            SHARDED_JOB_NAME: name,
            SHARDED_JOB_RECORDS: "3000",
            SHARDED_JOB_LEASE_MS: "1000",
          });
          all.push(p);
          return { out, p };
        }),
      );
      for (const { out, p } of started) {
        expect(await p.exited, p.stderr).toEqual({ code: 2, signal: null });
        expect(p.stderr).toContain(checkpoints);
        expect(p.stderr).toContain(`:${running.child.pid}:`);
        expect(await outputRows(out)).toEqual([]);
      }

      running.child.kill("SIGTERM");
      expect(await running.exited, running.stderr).toEqual({ code: 0, signal: null });
      expect(await expectExactPrefix(first)).toBeGreaterThan(0);
    } finally {
      for (const p of all) p.child.kill("SIGKILL");
    }
  });

  it("I9: a job paused past its lease loses the location to its next process: resumed, it completes nothing and is refused, and the output is exact", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-location-"));
    const at = locationOf(join(out, ".checkpoints"));
    const env = { SHARDED_JOB_RECORDS: "8000", SHARDED_JOB_RATE: "2000", SHARDED_JOB_LEASE_MS: "1000" };
    const all: Proc[] = [];
    try {
      const paused = startShard(out, at, [], env);
      all.push(paused);
      await until("the first process completed a checkpoint", async () => (await latestComplete(at)) > 0, all);
      paused.child.kill("SIGSTOP");
      const pausedAt = await latestComplete(at);
      const successor = startShard(out, at, [], env);
      all.push(successor);
      await until("the successor completed a checkpoint", async () => (await latestComplete(at)) > pausedAt + 1, all);
      paused.child.kill("SIGCONT");
      expect(await paused.exited, paused.stderr).toEqual({ code: 2, signal: null });
      expect(paused.stderr).toContain("holds");
      expect(await successor.exited, successor.stderr).toEqual({ code: 0, signal: null });
      await expectExactOutput(out, 8000);
    } finally {
      for (const p of all) p.child.kill("SIGKILL");
    }
  });

  it("a job SIGKILLed is taken over by its next process on this machine at once, without waiting out its lease", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-location-"));
    const at = locationOf(join(out, ".checkpoints"));
    // Ten minutes: a successor that waited the lease out would not finish within the test's time.
    const env = { SHARDED_JOB_RECORDS: "4000", SHARDED_JOB_RATE: "2000", SHARDED_JOB_LEASE_MS: "600000" };
    const killed = startShard(out, at, [], env);
    await until("the first process completed a checkpoint", async () => (await latestComplete(at)) > 0, [killed]);
    killed.child.kill("SIGKILL");
    expect((await killed.exited).signal).toBe("SIGKILL");
    const next = startShard(out, at, [], env);
    expect(await next.exited, next.stderr).toEqual({ code: 0, signal: null });
    expect(next.stderr).toContain("resuming from checkpoint");
    await expectExactOutput(out, 4000);
  });
});
