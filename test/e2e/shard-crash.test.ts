// A shard SIGKILLed at every fault point of its sink's lifecycle, then started again as
// another process in an empty working directory (as a rescheduled pod would be): the
// successor waits out the lease, restores the shard's head-named checkpoint and the output is
// exact. The points only recovery reaches are armed in a second process, after a first crash
// left pending work and in-progress files behind.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileSystemCheckpointStorage } from "@exactly/core";
import { FAULT_POINTS } from "@exactly/core/testing";
import { describe, expect, it } from "vitest";
import { expectExactOutput, type Location, startShard } from "./fixtures/shard-processes.ts";
import { checkpointsOf } from "./fixtures/sharded-seq-job.ts";

const RECORDS = 4_000;
const RECOVERY_POINTS = new Set(["during-recovery-commit", "during-lingering-abort"]);

describe("a shard killed at a fault point and started again elsewhere", () => {
  it.each(FAULT_POINTS)(
    "at %s: the successor, in an empty working directory, finishes with the output exact",
    async (point) => {
      const out = await mkdtemp(join(tmpdir(), "exactly-shard-crash-"));
      const at: Location = {
        env: {},
        storage: new FileSystemCheckpointStorage(checkpointsOf(out, undefined) as string),
      };
      const args = ["--shard", "0/1", "--lease-duration", "1"];
      const env = { SHARDED_JOB_RECORDS: String(RECORDS), SHARDED_JOB_RATE: "2000" };
      const crashes = RECOVERY_POINTS.has(point) ? ["after-checkpoint-durable@3", `${point}@1`] : [`${point}@3`];
      for (const fault of crashes) {
        const crashed = startShard(
          out,
          at,
          args,
          { ...env, EXACTLY_FAULT: fault },
          await mkdtemp(join(tmpdir(), "exactly-cwd-")),
        );
        expect(await crashed.exited, `${fault}\n${crashed.stderr}`).toEqual({ code: null, signal: "SIGKILL" });
      }
      const successor = startShard(out, at, args, env, await mkdtemp(join(tmpdir(), "exactly-cwd-")));
      expect(await successor.exited, successor.stderr).toEqual({ code: 0, signal: null });
      expect(successor.stderr).toContain("owns shard 0 of 1 at epoch");
      await expectExactOutput(out, RECORDS);
    },
  );
});
