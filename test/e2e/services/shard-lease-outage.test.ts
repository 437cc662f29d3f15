// The lease store out of reach for 5 s (every connection to Postgres, which holds the lease,
// cut and refused): the owner stops committing once its lease ran out by its own clock, the
// standby does not become a second owner while nobody can write the lease, and progress
// resumes when the store is back; the output is exact.
import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileSystemCheckpointStorage } from "@exactly/core";
import { pgUrl } from "@exactly/testkit/endpoints";
import { startTcpProxy } from "@exactly/testkit/tcp-proxy";
import { describe, expect, it } from "vitest";
import { expectExactOutput, head, type Location, type Proc, startShard, until } from "../fixtures/shard-processes.ts";
import { checkpointsOf } from "../fixtures/sharded-seq-job.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a shard whose lease store is out of reach for 5 s", () => {
  it("stops committing once its lease ran out, gets no second owner meanwhile, and goes on when the store is back", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-lease-outage-"));
    const target = new URL(pgUrl());
    const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port) });
    const leaseUrl = new URL(pgUrl());
    leaseUrl.port = String(proxy.port);
    const at: Location = {
      env: {
        SHARDED_JOB_LEASE_PG: leaseUrl.toString(),
        SHARDED_JOB_LEASE_NAME: `outage-${randomBytes(4).toString("hex")}`,
      },
      storage: new FileSystemCheckpointStorage(checkpointsOf(out, undefined) as string),
    };
    const args = ["--shard", "0/1", "--lease-duration", "2"];
    const owner = startShard(out, at, args);
    let standby: Proc | undefined;
    try {
      await until("the owner completed checkpoints", async () => ((await head(at))?.latest?.checkpointId ?? 0) >= 3, [
        owner,
      ]);
      standby = startShard(out, at, args);
      const second = standby;
      await until(
        "the standby is waiting for the shard",
        async () => second.stderr.includes("waiting for shard 0 of 1"),
        [owner, second],
      );

      const epoch = (await head(at))?.epoch;
      proxy.setDown(true);
      // Past 0.9 × the lease (1.8 s) and a renewal tick, the owner may no longer complete a checkpoint.
      await sleep(2_500);
      const during = await head(at);
      await sleep(2_500);
      const end = await head(at);
      expect(end?.latest).toEqual(during?.latest);
      expect(end?.epoch).toBe(epoch);
      proxy.setDown(false);

      const stopped = end?.latest?.checkpointId ?? 0;
      await until("checkpoints complete again", async () => ((await head(at))?.latest?.checkpointId ?? 0) > stopped, [
        owner,
        second,
      ]);
      expect(await owner.exited).toEqual({ code: 0, signal: null });
      expect(await second.exited).toEqual({ code: 0, signal: null });
    } finally {
      if (process.env.DEBUG_OUTAGE) console.log(`OWNER\n${owner.stderr}\nSTANDBY\n${standby?.stderr}`);
      owner.child.kill("SIGKILL");
      standby?.child.kill("SIGKILL");
      await proxy.close();
    }
    await expectExactOutput(out);
  });
});
