// Rescale by restart with real processes (docs/design.md §2, Shards): two shard processes
// lost mid-run (SIGKILL), three started in their place and stopped with a final checkpoint
// (SIGTERM), then one to the end, each rescale declared first (`exactly rescale`). Each layout
// restores its keys and splits from the old shards' latest checkpoints, so every per-key
// sequence and count stays exact. A process whose count nobody declared, or one of an older
// layout started again, is refused and moves nothing.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { declareRescale, FileSystemCheckpointStorage } from "@exactly/core";
import { describe, expect, it } from "vitest";
import { expectExactOutput, head, type Location, type Proc, startShard, until } from "./fixtures/shard-processes.ts";
import { checkpointsOf } from "./fixtures/sharded-seq-job.ts";

const RECORDS = 12_000;

describe("a job rescaled by restart", () => {
  it("I3: 2 → 3 → 1 shard processes keep every per-key sequence and count exact; a count nobody declared is refused", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-shard-rescale-"));
    const checkpoints = checkpointsOf(out, undefined) as string;
    const at: Location = { env: {}, storage: new FileSystemCheckpointStorage(checkpoints) };
    const env = { SHARDED_JOB_RECORDS: String(RECORDS), SHARDED_JOB_RATE: "3000" };
    const all: Proc[] = [];
    const layout = async () =>
      (await at.storage.record?.<{ count: number; generation: number }>("layout").read())?.value;
    /** A process of `shard` refused, naming the setting, with the layout left as it was. */
    const refused = async (shard: string) => {
      const before = await layout();
      const p = startShard(out, at, ["--shard", shard, "--lease-duration", "1"], env);
      all.push(p);
      expect(await p.exited, p.stderr).toEqual({ code: 2, signal: null });
      expect(p.stderr).toContain("exactly rescale");
      expect(await layout()).toEqual(before);
    };
    // As `exactly rescale <location> <count>` does (packages/cli/test/rescale-command.test.ts).
    const rescale = (count: number) => declareRescale(at.storage, count);
    const shards = (count: number) =>
      Array.from({ length: count }, (_, k) =>
        startShard(out, at, ["--shard", `${k}/${count}`, "--lease-duration", "1"], env),
      );
    /** Until each shard's own owner has completed a checkpoint (the head names one of its epoch). */
    const committedByEach = (procs: Proc[]) =>
      until(
        "every shard completed a checkpoint",
        async () => {
          for (let k = 0; k < procs.length; k++) {
            const state = await head(at, k);
            if (!state?.latest || state.latest.epoch !== state.epoch) return false;
          }
          return true;
        },
        procs,
      );
    try {
      const two = shards(2);
      all.push(...two);
      await committedByEach(two);
      for (const p of two) p.child.kill("SIGKILL");
      for (const p of two) expect((await p.exited).signal).toBe("SIGKILL");
      await refused("0/3");

      await rescale(3);
      const three = shards(3);
      all.push(...three);
      await committedByEach(three);
      for (const p of three) p.child.kill("SIGTERM");
      for (const p of three) expect(await p.exited, p.stderr).toEqual({ code: 0, signal: null });
      expect(three.map((p) => p.stderr).join("\n")).toContain("rescaled from 2 to 3 shards");
      // A process of the layout before, started again: it never moves the layout back.
      await refused("1/2");

      await rescale(1);
      const [one] = shards(1) as [Proc];
      all.push(one);
      expect(await one.exited, one.stderr).toEqual({ code: 0, signal: null });
      expect(one.stderr).toContain("rescaled from 3 to 1 shards");
    } finally {
      for (const p of all) p.child.kill("SIGKILL");
    }
    await expectExactOutput(out, RECORDS);
  });
});
