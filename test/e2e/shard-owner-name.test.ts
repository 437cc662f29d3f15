// Two shard processes given the same lease owner name (StreamJobOptions.lease.owner), with real
// processes (docs/design.md §2, Shards): the name is the user's, so the lease tells two
// processes apart by a nonce of each. The second is refused, naming lease.owner, rather than
// the two taking the shard from each other in turn.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileSystemCheckpointStorage } from "@exactly/core";
import { describe, expect, it } from "vitest";
import { expectExactPrefix, head, type Location, type Proc, startShard, until } from "./fixtures/shard-processes.ts";
import { checkpointsOf } from "./fixtures/sharded-seq-job.ts";

describe("two shard processes with one lease owner name", () => {
  it("the second is refused at once, naming lease.owner, and the first keeps its shard", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-owner-name-"));
    const at: Location = { env: {}, storage: new FileSystemCheckpointStorage(checkpointsOf(out, undefined) as string) };
    const args = ["--shard", "0/1"];
    const env = { SHARDED_JOB_RECORDS: "1000000", SHARDED_JOB_LEASE_OWNER: "orders-0", SHARDED_JOB_LEASE_MS: "1500" };
    const all: Proc[] = [];
    try {
      const first = startShard(out, at, args, env);
      all.push(first);
      await until("the first process completed a checkpoint", async () => (await head(at))?.latest !== undefined, all);
      // A short run: were it let in, it would end soon rather than take turns with the first forever.
      const second = startShard(out, at, args, { ...env, SHARDED_JOB_RECORDS: "3000" });
      all.push(second);
      expect(await second.exited, second.stderr).toEqual({ code: 2, signal: null });
      expect(second.stderr).toContain("lease.owner");
      first.child.kill("SIGTERM");
      expect(await first.exited, first.stderr).toEqual({ code: 0, signal: null });
      expect(first.stderr.match(/owns shard 0 of 1 at epoch/g)).toHaveLength(1);
      expect(await expectExactPrefix(out)).toBeGreaterThan(0);
    } finally {
      for (const p of all) p.child.kill("SIGKILL");
    }
  });
});
