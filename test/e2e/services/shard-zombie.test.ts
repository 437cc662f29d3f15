// I9 with real processes: the owner of a shard is paused (SIGSTOP) past its lease, a successor
// process takes the shard at the next epoch and commits, and the old owner is resumed
// (SIGCONT). Nothing the old owner does after the takeover may become visible: its
// checkpoint head write is refused, so its sinks commit nothing, and the output stays exact.
import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { type CheckpointStorage, FileSystemCheckpointStorage } from "@exactly/core";
import { s3Config } from "@exactly/testkit/endpoints";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectExactOutput, head, type Location, type Proc, startShard, until } from "../fixtures/shard-processes.ts";
import { checkpointsOf } from "../fixtures/sharded-seq-job.ts";

const bucket = `exactly-shards-${randomBytes(4).toString("hex")}`;
let s3: S3Client | undefined;
beforeAll(async () => {
  s3 = new S3Client(s3Config());
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
});
afterAll(() => s3?.destroy());

/** The places checkpoints (and so the lease and the head) are kept, each run with the same scenarios. */
const locations: Array<[string, (out: string) => Location]> = [
  [
    "checkpoints in a local folder",
    (out) => ({ env: {}, storage: new FileSystemCheckpointStorage(checkpointsOf(out, undefined) as string) }),
  ],
  [
    "checkpoints on S3",
    (out) => {
      const location = `s3://${bucket}/${out.split("/").at(-1)}`;
      const config = s3Config();
      const env = {
        SHARDED_JOB_CHECKPOINTS: location,
        EXACTLY_S3_ENDPOINT: config.endpoint,
        EXACTLY_S3_REGION: config.region,
        EXACTLY_S3_ACCESS_KEY: config.credentials.accessKeyId,
        EXACTLY_S3_SECRET_KEY: config.credentials.secretAccessKey,
      };
      return { env, storage: withEnv(env, () => checkpointsOf(out, location) as CheckpointStorage) };
    },
  ],
];

function withEnv<T>(env: Record<string, string>, make: () => T): T {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    return make();
  } finally {
    for (const key of Object.keys(env)) if (saved[key] === undefined) delete process.env[key];
    Object.assign(process.env, saved);
  }
}

describe.each(locations)("a shard's owner paused past its lease, %s", (_, locate) => {
  it("I9: is fenced once a successor took the shard: resumed, its checkpoint is refused, it stands by, and the output is exact", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-shard-zombie-"));
    const at = locate(out);
    const args = ["--shard", "0/1", "--lease-duration", "2"];
    const old = startShard(out, at, args);
    let successor: Proc | undefined;
    try {
      await until(
        "the first owner completed checkpoints",
        async () => ((await head(at))?.latest?.checkpointId ?? 0) >= 3,
        [old],
      );
      // A run's epochs begin at its first layout's clock; each new owner takes the next one.
      const first = (await head(at))?.epoch as number;
      old.child.kill("SIGSTOP");
      const pausedAt = (await head(at))?.latest;
      successor = startShard(out, at, args);
      const next = successor;
      await until(
        "the successor completed a checkpoint at the next epoch",
        async () => (await head(at))?.latest?.epoch === first + 1,
        [old, next],
      );
      expect(next.stderr).toContain("waiting for shard 0 of 1");
      expect(next.stderr).toContain(`resuming from checkpoint ${pausedAt?.checkpointId}`);
      old.child.kill("SIGCONT");
      // Resumed, the old owner finds its lease gone: its attempt fails, and it waits for the shard again.
      await until(
        "the old owner noticed it lost the shard",
        async () => /shard lease|of this shard is fenced/.test(old.stderr),
        [old, next],
      );
      expect((await head(at))?.epoch).toBe(first + 1);
      expect(await next.exited).toEqual({ code: 0, signal: null });
      // The successor finished and released the shard: the old process takes it at the epoch
      // after, restores the final checkpoint, finds nothing left to read, and ends.
      expect(await old.exited).toEqual({ code: 0, signal: null });
      expect(old.stderr).toContain(`owns shard 0 of 1 at epoch ${first + 2}`);
    } finally {
      old.child.kill("SIGKILL");
      successor?.child.kill("SIGKILL");
    }

    await expectExactOutput(out);
  });

  it("I9: that paused between writing a checkpoint's metadata and naming it on the head has that checkpoint refused once resumed, and the output is exact", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-shard-zombie-"));
    const at = locate(out);
    const args = ["--shard", "0/1", "--lease-duration", "2"];
    // The old owner stops itself (SIGSTOP) at its 4th checkpoint, after the lease check and the
    // metadata write: only the head's compare-and-set stands between it and a commit.
    const old = startShard(out, at, args, { EXACTLY_FAULT: "before-checkpoint-head@4", EXACTLY_FAULT_ACTION: "stop" });
    let successor: Proc | undefined;
    let first = 0;
    try {
      await until(
        "the first owner stopped at the head write",
        async () => old.stderr.includes("exactly-fault: stopped"),
        [old],
      );
      first = (await head(at))?.epoch as number;
      expect((await head(at))?.latest).toEqual({ checkpointId: 3, epoch: first });
      // Its checkpoint 4 is written, and not complete: the head does not name it.
      const written = await at.storage.scoped?.("shard-0").scoped?.(`epoch-${first}`).load?.(4);
      expect(written?.metadata).toMatchObject({ checkpointId: 4, epoch: first });
      successor = startShard(out, at, args);
      const next = successor;
      await until(
        "the successor completed a checkpoint at the next epoch",
        async () => (await head(at))?.latest?.epoch === first + 1,
        [old, next],
      );
      expect(next.stderr).toContain("resuming from checkpoint 3");
      old.child.kill("SIGCONT");
      // Resumed inside the completion of checkpoint 4: its metadata is written, but the head,
      // which the successor fenced at the next epoch, refuses to name it, so no sink commits it.
      await until(
        "the old owner failed its attempt",
        async () => /shard lease taken by another owner|of this shard is fenced/.test(old.stderr),
        [old, next],
      );
      expect(await next.exited).toEqual({ code: 0, signal: null });
      expect(await old.exited).toEqual({ code: 0, signal: null });
    } finally {
      old.child.kill("SIGKILL");
      successor?.child.kill("SIGKILL");
    }
    // The head never named the old owner's checkpoint 4: the last owner, two epochs on, completed last.
    expect((await head(at))?.latest?.epoch).toBe(first + 2);
    // Once it completed a checkpoint, the last owner removed the folders of the epochs before it.
    expect((await at.storage.scoped?.("shard-0").scopes?.())?.filter((n) => n.startsWith("epoch-"))).toEqual([
      `epoch-${first + 2}`,
    ]);
    await expectExactOutput(out);
  });
});
