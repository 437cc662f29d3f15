import { describe, expect, it } from "vitest";
import {
  ConfigurationError,
  FIRST_GROUP,
  GeneratorSource,
  type Repartition,
  type RepartitionRoute,
  StreamJob,
} from "../src/index.ts";
import { keyGroupOf, keyGroupRange } from "../src/operators/key-groups.ts";
import { repartitionRoute } from "../src/runtime/api/repartition.ts";
import { MemorySink, MemoryStore, tempDir } from "./helpers.ts";

interface Click {
  readonly id: number;
  readonly user: string;
}

/** A log that is never run here: the graph is what these tests look at. */
function memoryLog(
  partitions: number,
  group = "downstream",
): Repartition<Click> & { routes: RepartitionRoute<Click>[] } {
  const routes: RepartitionRoute<Click>[] = [];
  return {
    group,
    uid: "by-user",
    partitions,
    routes,
    writer: (route) => {
      routes.push(route);
      return () => new MemorySink<Click>(new MemoryStore());
    },
    reader: (route) => {
      routes.push(route);
      return new GeneratorSource<Click>({ count: 0, generate: (i) => ({ id: i, user: `u${i}` }) });
    },
  };
}

async function clicksJob(partitions: number, options: { group?: string } = {}) {
  const log = memoryLog(partitions);
  const job = new StreamJob({
    name: "clicks",
    maxParallelism: 16,
    checkpoint: { storage: await tempDir() },
    ...(options.group ? { group: options.group } : {}),
  });
  job
    .fromSource(new GeneratorSource<Click>({ count: 10, generate: (i) => ({ id: i, user: `u${i % 3}` }) }))
    .map((c) => c)
    .keyBy((c) => c.user, { across: log })
    .process<Click, number>({ processElement: (c, ctx) => ctx.emit(c) })
    .sinkTo(() => new MemorySink<Click>(new MemoryStore()), { name: "out" });
  return { job, log };
}

describe("repartition routes", () => {
  it("puts each key group in one partition, a contiguous range, every partition used", () => {
    for (const [maxParallelism, partitions] of [
      [128, 6],
      [128, 128],
      [16, 5],
      [7, 3],
    ] as const) {
      const route = repartitionRoute<string>((s) => s, maxParallelism, partitions);
      const byGroup = Array.from({ length: maxParallelism }, (_v, g) => Math.floor((g * partitions) / maxParallelism));
      for (let i = 0; i < 500; i++) {
        const key = `k${i}`;
        expect(route.partitionOf(key)).toBe(byGroup[keyGroupOf(key, maxParallelism)]);
      }
      for (let g = 1; g < maxParallelism; g++) expect(byGroup[g]).toBeGreaterThanOrEqual(byGroup[g - 1] as number);
      expect(new Set(byGroup).size).toBe(partitions);
    }
  });

  it("gives each partition to one reader, in the shard that owns all its key groups, when the partitions are a multiple of the shards", () => {
    const maxParallelism = 128;
    for (const [partitions, shards, perShard] of [
      [6, 3, 1],
      [6, 2, 2],
      [12, 3, 2],
      [4, 1, 3],
    ] as const) {
      const route = repartitionRoute<string>((s) => s, maxParallelism, partitions);
      const parallelism = shards * perShard;
      for (let p = 0; p < partitions; p++) {
        const readers = Array.from({ length: parallelism }, (_v, subtask) => subtask).filter((subtask) =>
          route.readsPartition(p, { subtask, parallelism, restoredPositions: undefined }),
        );
        expect(readers, `partition ${p} of ${partitions}, ${shards} shards`).toHaveLength(1);
        const shard = Math.floor((readers[0] as number) / perShard);
        // Every key group of the partition belongs to a subtask of that shard.
        for (let g = 0; g < maxParallelism; g++) {
          if (Math.floor((g * partitions) / maxParallelism) !== p) continue;
          const owner = Array.from({ length: parallelism }, (_v, s) => s).find((s) => {
            const range = keyGroupRange(s, parallelism, maxParallelism);
            return g >= range.start && g <= range.end;
          });
          expect(Math.floor((owner as number) / perShard), `key group ${g}`).toBe(shard);
        }
      }
    }
  });

  it("refuses more partitions than key groups, and none", () => {
    expect(() => repartitionRoute((s: string) => s, 16, 17)).toThrow(ConfigurationError);
    expect(() => repartitionRoute((s: string) => s, 16, 0)).toThrow(/partitions/);
  });
});

describe("a job with a repartition", () => {
  it("runs as two groups: the stages before the keyBy end in the log's writer, the ones after start at its reader", async () => {
    const { job, log } = await clicksJob(4);
    expect(job.groups).toEqual([FIRST_GROUP, "downstream"]);
    job.assignGroup(FIRST_GROUP);
    const upstream = job.graph();
    expect(upstream.group).toBe(FIRST_GROUP);
    expect(upstream.stages.map((s) => [s.kind, s.id])).toEqual([
      ["source", "source:generator"],
      ["sink", "by-user"],
    ]);
    expect(upstream.stages[0]?.outputs.map((e) => e.partitioning.kind)).toEqual(["forward"]);
    expect(log.routes.map((r) => r.partitions)).toEqual([4, 4]);

    const { job: again } = await clicksJob(4, { group: "downstream" });
    const downstream = again.graph();
    expect(downstream.group).toBe("downstream");
    expect(downstream.stages.map((s) => [s.kind, s.id])).toEqual([
      ["source", "source:by-user"],
      ["operator", "process-1"],
      ["sink", "out"],
    ]);
    expect(downstream.stages[0]?.outputs.map((e) => e.partitioning.kind)).toEqual(["hash"]);
    expect(again.identity).toEqual({ name: "clicks", id: "clicks", group: "downstream" });
  });

  it("refuses to run without a group, or with one it does not have, naming group", async () => {
    const { job } = await clicksJob(4);
    expect(() => job.graph()).toThrow(/groups "upstream", "downstream".*--group/);
    job.assignGroup("sideways");
    const error = (() => {
      try {
        job.graph();
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("group");
    expect(() => new StreamJob({ name: "x", group: "../up", checkpoint: { storage: "/tmp/x" } })).toThrow(/group/);
  });

  it("refuses shards of the group after the log that its partitions cannot be shared out among, naming partitions", async () => {
    const { job } = await clicksJob(4, { group: "downstream" });
    job.assignShard({ index: 0, count: 3 });
    expect(() => job.graph()).toThrow(/partitions.*3 shards/);
    const { job: fits } = await clicksJob(4, { group: "downstream" });
    fits.assignShard({ index: 1, count: 2 });
    expect(fits.graph().shard).toEqual({ index: 1, count: 2 });
    // The group before the log is not bound by it.
    const { job: before } = await clicksJob(4, { group: FIRST_GROUP });
    before.assignShard({ index: 0, count: 3 });
    expect(before.graph().shard).toEqual({ index: 0, count: 3 });
  });

  it("keeps each group's checkpoints in a folder of its own", async () => {
    const { job } = await clicksJob(4, { group: "downstream" });
    const { storage } = job.executionSetup();
    expect(storage).toMatchObject({ directory: expect.stringMatching(/\/group-downstream$/) });
  });
});

describe("a group's checkpoints", () => {
  it("are refused by another group, naming group (each keeps its own folder)", async () => {
    const { job } = await clicksJob(4, { group: "downstream" });
    const { storage } = job.executionSetup();
    // A checkpoint of the upstream group, put where the downstream group keeps its own.
    await storage.beginCheckpoint(1);
    const { handle } = await storage.writeTaskState(1, "out/0", { pending: [] });
    await storage.completeCheckpoint({
      checkpointId: 1,
      timestamp: Date.now(),
      jobName: "clicks",
      job: { name: "clicks", id: "clicks", group: "upstream" },
      stages: { out: { parallelism: 1, kind: "sink" } },
      maxParallelism: 16,
      taskStates: { "out/0": handle },
    });
    const error = await job.execute().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("group");
    expect(String(error)).toContain('written by group "upstream" of job "clicks"');
  });
});
