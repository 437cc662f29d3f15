// Every checkpoint of a job's location, sharded or not, as the tools read it (shards/
// location-checkpoints.ts): the root's own, every epoch folder of every shard, each named
// with its shard and epoch; a sub-folder refused naming the root; a checkpoint a head or the
// layout's base names, missing, refused rather than read as nothing.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  type CheckpointMetadata,
  type CheckpointStorage,
  CheckpointStorageError,
  ConfigurationError,
  FileSystemCheckpointStorage,
} from "../src/index.ts";
import { type HeadState, readLocationCheckpoints } from "../src/internal.ts";
import { tempDir } from "./helpers.ts";

async function checkpoint(storage: CheckpointStorage, checkpointId: number, extra: Partial<CheckpointMetadata> = {}) {
  await storage.beginCheckpoint(checkpointId);
  const { handle } = await storage.writeTaskState(checkpointId, "out/0", { pending: [{ txn: checkpointId }] });
  await storage.completeCheckpoint({
    checkpointId,
    timestamp: Date.now(),
    jobName: "job",
    stages: { out: { parallelism: 1, kind: "sink" } },
    maxParallelism: 128,
    taskStates: { "out/0": handle },
    ...extra,
  });
}

/**
 * A job that ran unsharded (checkpoint 2 at the root), then as 2 shards: shard 0 in epoch 10,
 * then in epoch 11 (epoch 10's folder kept: the layout's base names it), shard 1 in epoch 10.
 */
async function shardedLocation(): Promise<{ dir: string; root: FileSystemCheckpointStorage }> {
  const dir = await tempDir("exactly-location-");
  const root = new FileSystemCheckpointStorage(dir);
  await checkpoint(root, 2);
  const shard = (index: number) => root.scoped(`shard-${index}`);
  const sharded = (index: number, epoch: number) => ({ shard: { index, count: 2 }, epoch, generation: 1 });
  await checkpoint(shard(0).scoped("epoch-10"), 3, sharded(0, 10));
  await checkpoint(shard(0).scoped("epoch-11"), 4, sharded(0, 11));
  await checkpoint(shard(1).scoped("epoch-10"), 3, sharded(1, 10));
  await shard(0)
    .record<HeadState>("head")
    .replace(undefined, { epoch: 11, latest: { checkpointId: 4, epoch: 11 } });
  await shard(1)
    .record<HeadState>("head")
    .replace(undefined, { epoch: 10, latest: { checkpointId: 3, epoch: 10 } });
  await root.record("layout").replace(undefined, {
    count: 2,
    generation: 1,
    minEpoch: 10,
    base: [{ shard: 0, checkpointId: 3, epoch: 10 }],
  });
  return { dir, root };
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (e: unknown) => e,
  );

describe("every checkpoint of a location", () => {
  it("of a sharded job: the root's own, and every epoch folder of every shard, each with its shard and epoch", async () => {
    const { dir, root } = await shardedLocation();
    const read = await readLocationCheckpoints(root, dir, "--checkpoints");
    expect(read.shards).toEqual([0, 1]);
    expect(read.checkpoints.map((c) => [c.shard, c.epoch, c.checkpointId, c.metadata !== undefined])).toEqual([
      [undefined, undefined, 2, true],
      [0, 10, 3, true],
      [0, 11, 4, true],
      [1, 10, 3, true],
    ]);
    expect(read.checkpoints[3]?.states.get("out/0")?.state).toEqual({ pending: [{ txn: 3 }] });
  });

  it("of a job never sharded: its checkpoints, and no shard", async () => {
    const dir = await tempDir("exactly-location-");
    const root = new FileSystemCheckpointStorage(dir);
    await checkpoint(root, 1);
    const read = await readLocationCheckpoints(root, dir, "--checkpoints");
    expect(read.shards).toEqual([]);
    expect(read.checkpoints.map((c) => [c.shard, c.checkpointId])).toEqual([[undefined, 1]]);
  });

  it("refuses a shard's folder, an epoch folder and a checkpoint's folder, naming the root to give instead", async () => {
    const { dir } = await shardedLocation();
    for (const sub of ["shard-0", "shard-1/", "shard-0/epoch-10", "shard-1/epoch-10/chk-3"]) {
      const location = join(dir, sub);
      const error = await refusal(
        readLocationCheckpoints(new FileSystemCheckpointStorage(location), location, "--checkpoints"),
      );
      expect(error, sub).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).setting).toBe("--checkpoints");
      expect((error as Error).message).toContain(`give the job's root location ${dir}`);
    }
    // Where the folder holds nothing that tells, its name does: an s3:// location's root stays in its bucket.
    const empty = new FileSystemCheckpointStorage(await tempDir("exactly-location-"));
    for (const [location, root] of [
      ["s3://bucket/jobs/a/shard-2/epoch-7/chk-9", "s3://bucket/jobs/a"],
      ["s3://bucket/shard-2", "s3://bucket"],
      ["chk-4", "."],
      ["/chk-4", "/"],
    ] as const) {
      const error = await refusal(readLocationCheckpoints(empty, location, "--checkpoints"));
      expect((error as Error).message, location).toContain(`give the job's root location ${root}`);
    }
  });

  it("refuses to read past a checkpoint a shard's head or the layout's base names and that is missing", async () => {
    const { dir, root } = await shardedLocation();
    await root.scoped("shard-1").removeScope("epoch-10");
    const error = await refusal(readLocationCheckpoints(root, dir, "--checkpoints"));
    expect(error).toBeInstanceOf(CheckpointStorageError);
    expect((error as Error).message).toContain("shard 1's head names checkpoint 3 in shard-1/epoch-10");

    const again = await shardedLocation();
    await again.root.scoped("shard-0").removeScope("epoch-10");
    const base = await refusal(readLocationCheckpoints(again.root, again.dir, "--checkpoints"));
    expect(base).toBeInstanceOf(CheckpointStorageError);
    expect((base as Error).message).toContain("the shard layout's base names checkpoint 3 in shard-0/epoch-10");
  });

  it("of a job run as groups: every group's folder, sharded or not, each checkpoint with its group; a group's folder refused", async () => {
    const dir = await tempDir("exactly-location-");
    const root = new FileSystemCheckpointStorage(dir);
    const upstream = root.scoped("group-upstream");
    await checkpoint(upstream, 5, { job: { name: "job", id: "job", group: "upstream" } });
    const downstream = root.scoped("group-downstream");
    await checkpoint(downstream.scoped("shard-1").scoped("epoch-20"), 7, {
      job: { name: "job", id: "job", group: "downstream" },
      shard: { index: 1, count: 2 },
      epoch: 20,
      generation: 1,
    });
    await downstream
      .scoped("shard-1")
      .record<HeadState>("head")
      .replace(undefined, { epoch: 20, latest: { checkpointId: 7, epoch: 20 } });
    await downstream.record("layout").replace(undefined, { count: 2, generation: 1, minEpoch: 20, base: [] });

    const read = await readLocationCheckpoints(root, dir, "--checkpoints");
    expect(read.groups).toEqual(["downstream", "upstream"]);
    expect(read.shards).toEqual([1]);
    expect(read.checkpoints.map((c) => [c.group, c.shard, c.epoch, c.checkpointId])).toEqual([
      ["downstream", 1, 20, 7],
      ["upstream", undefined, undefined, 5],
    ]);

    // Given one group's folder, a tool would see none of the other group's pre-committed work.
    for (const [sub, what] of [
      ["group-upstream", 'group "upstream"'],
      ["group-downstream", 'group "downstream"'],
      ["group-downstream/shard-1", "a shard's folder"],
      ["group-downstream/shard-1/epoch-20", "an epoch folder of shard 1"],
    ] as const) {
      const location = join(dir, sub);
      const error = await refusal(
        readLocationCheckpoints(new FileSystemCheckpointStorage(location), location, "--checkpoints"),
      );
      expect(error, sub).toBeInstanceOf(ConfigurationError);
      expect((error as Error).message, sub).toContain(what);
      expect((error as Error).message, sub).toContain(`give the job's root location ${dir}`);
    }
  });
});
