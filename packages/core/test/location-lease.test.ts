// One job per checkpoint location at a time, within one process and against a holder
// elsewhere (docs/design.md §2, Recovery): a job that is not sharded holds its location with a
// lease, as a shard of one. Processes are in test/e2e/location-lease.test.ts.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  type CheckpointStorage,
  ConfigurationError,
  FileSystemCheckpointStorage,
  GeneratorSource,
  type JobClient,
  type LeaseState,
  type Logger,
  ShardLeaseLostError,
  type ShardSpec,
  StreamJob,
  type StreamJobOptions,
  silentLogger,
} from "../src/index.ts";
import { FileConditionalRecord, ShardLease } from "../src/internal.ts";
import { LocationOwner } from "../src/shards/location-owner.ts";
import { MemorySink, MemoryStore, tempDir } from "./helpers.ts";

interface JobSettings {
  readonly name?: string;
  readonly records?: number;
  readonly rate?: number;
  readonly lease?: StreamJobOptions["lease"];
  readonly logger?: Logger;
  readonly shard?: ShardSpec;
  readonly fail?: boolean;
}

/** A job of `records` ids into `store`; by default its lease lasts ten minutes, so no test passes by waiting one out. */
function job(storage: string | CheckpointStorage, store: MemoryStore, settings: JobSettings = {}): StreamJob {
  const j = new StreamJob({
    name: settings.name ?? "located",
    workers: 1,
    logger: settings.logger ?? silentLogger,
    checkpoint: { storage, intervalMs: 20 },
    restart: { maxRestarts: 0 },
    lease: settings.lease ?? { durationMs: 600_000 },
    ...(settings.shard ? { shard: settings.shard } : {}),
  });
  j.fromSource(
    new GeneratorSource({
      count: settings.records ?? 200,
      ...(settings.rate ? { ratePerSecond: settings.rate } : {}),
      generate: (id) => ({ id }),
    }),
  ).sinkTo(
    () =>
      new (class extends MemorySink<{ id: number }> {
        protected override writeRecord(txn: { id: string }, record: { id: number }) {
          if (settings.fail && record.id === 100) throw new Error("a record this sink cannot write");
          return super.writeRecord(txn, record);
        }
      })(store),
    { name: "out" },
  );
  return j;
}

/** Starts `j` and resolves once it completed a checkpoint. */
async function running(j: StreamJob): Promise<JobClient> {
  let completed!: () => void;
  const first = new Promise<void>((resolve) => {
    completed = resolve;
  });
  const client = j.start({ onComplete: () => completed() });
  await Promise.race([first, client.result]);
  return client;
}

async function refusal(j: StreamJob): Promise<ConfigurationError> {
  const error = await j.execute().catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ConfigurationError);
  return error as ConfigurationError;
}

function ids(store: MemoryStore): number[] {
  return (store.committed as Array<{ id: number }>).map((r) => r.id).sort((a, b) => a - b);
}

describe("a job's checkpoint location", () => {
  it("refuses a second job, of any name, while a job of this process holds it, naming the location and the holder; a graceful end frees it", async () => {
    const dir = await tempDir();
    const store = new MemoryStore();
    const first = await running(job(dir, store, { records: 1_000_000, rate: 2000 }));
    for (const name of ["located", "another"]) {
      const refused = await refusal(job(dir, new MemoryStore(), { name }));
      expect(refused.setting).toBe("checkpoint.storage");
      expect(refused.message).toContain(dir);
      expect(refused.message).toContain('job "located"');
    }
    await first.stop();
    const after = await job(dir, store).execute();
    expect(after.restoredCheckpointId).toBeGreaterThan(0);
  });

  it("is taken at once by the next job of this process when the job before failed without releasing it", async () => {
    const dir = await tempDir();
    const failed = await job(dir, new MemoryStore(), { fail: true })
      .execute()
      .catch((e: unknown) => e);
    expect((failed as Error).message).toContain("a record this sink cannot write");
    const store = new MemoryStore();
    await job(dir, store).execute();
    expect(ids(store)).toEqual(Array.from({ length: 200 }, (_, i) => i));
  });

  it("is taken over from a holder on another machine once it went unrenewed for the lease's duration, at the next epoch; a holder that renews refuses the job", async () => {
    const dir = await tempDir();
    const record = new FileConditionalRecord<LeaseState>(join(dir, "_lease"));
    const elsewhere: LeaseState = {
      epoch: 7,
      owner: "elsewhere:1",
      nonce: "0123",
      released: false,
      process: { machine: "another machine", pid: 1, thread: "0123" },
    };
    await record.replace(undefined, elsewhere);
    const store = new MemoryStore();
    await job(dir, store, { lease: { durationMs: 300 } }).execute();
    expect(ids(store)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect((await record.read())?.value).toMatchObject({ epoch: 8, released: true });

    const renewed = await record.replace((await record.read())?.version, elsewhere);
    let version = renewed;
    const renewing = setInterval(() => {
      void record.replace(version, elsewhere).then((v) => {
        version = v ?? version;
      });
    }, 50);
    try {
      const refused = await refusal(job(dir, new MemoryStore(), { lease: { durationMs: 300 } }));
      expect(refused.setting).toBe("checkpoint.storage");
      expect(refused.message).toContain("elsewhere:1");
    } finally {
      clearInterval(renewing);
    }
  });

  it("refuses a job started without a shard on a location a sharded run moved on to, naming shard", async () => {
    const dir = await tempDir();
    await job(dir, new MemoryStore(), { shard: { index: 0, count: 1 } }).execute();
    const refused = await refusal(job(dir, new MemoryStore()));
    expect(refused.setting).toBe("shard");
  });

  it("keeps a first sharded run waiting until the job run without shards stopped, so it starts from that job's last checkpoint", async () => {
    const dir = await tempDir();
    const store = new MemoryStore();
    const unsharded = await running(job(dir, store, { records: 3000, rate: 2000 }));
    const sharded = job(dir, store, { records: 3000, rate: 2000, shard: { index: 0, count: 1 } }).execute();
    // The sharded run has read the location by now, whatever it makes of it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const stopped = await unsharded.stop();
    expect(stopped.checkpointsCompleted).toBeGreaterThan(0);
    await sharded;
    expect(ids(store)).toEqual(Array.from({ length: 3000 }, (_, i) => i));
  });

  it("without conditional records in its storage, runs unguarded with a warning naming checkpoint.storage, unless lease.record gives the lease a place", async () => {
    const dir = await tempDir();
    // A custom storage: the interface's required methods only.
    const customAt = (inner: FileSystemCheckpointStorage): CheckpointStorage => ({
      highestCheckpointId: () => inner.highestCheckpointId(),
      beginCheckpoint: (id) => inner.beginCheckpoint(id),
      writeTaskState: (id, key, state) => inner.writeTaskState(id, key, state),
      completeCheckpoint: (metadata) => inner.completeCheckpoint(metadata),
      discardCheckpoint: (id) => inner.discardCheckpoint(id),
      loadLatest: () => inner.loadLatest(),
      listCompleted: () => inner.listCompleted(),
      logStore: (namespace) => inner.logStore(namespace),
    });
    const warnings: string[] = [];
    const logger: Logger = { ...silentLogger, warn: (message: string) => warnings.push(message) };
    const store = new MemoryStore();
    await job(customAt(new FileSystemCheckpointStorage(join(dir, "unguarded"))), store, { logger }).execute();
    expect(ids(store)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(warnings.filter((w) => w.startsWith("checkpoint.storage:"))).toHaveLength(1);

    const custom = customAt(new FileSystemCheckpointStorage(join(dir, "guarded")));
    const leaseRecord = (_shard: ShardSpec) => new FileConditionalRecord<LeaseState>(join(dir, "lease-elsewhere"));
    const first = await running(
      job(custom, new MemoryStore(), { records: 1_000_000, rate: 2000, lease: { record: leaseRecord } }),
    );
    try {
      const refused = await refusal(job(custom, new MemoryStore(), { lease: { record: leaseRecord } }));
      expect(refused.setting).toBe("checkpoint.storage");
    } finally {
      first.cancel();
      await first.result.catch(() => {});
    }
  });

  it("I9: begins and completes no checkpoint once its lease went unrenewed for 0.9 × its duration", async () => {
    const dir = await tempDir();
    const storage = new FileSystemCheckpointStorage(dir);
    const lease = new ShardLease(new FileConditionalRecord<LeaseState>(join(dir, "_lease")), { durationMs: 300 });
    const owner = new LocationOwner(lease, storage, dir, silentLogger);
    await owner.claim(() => {});
    await owner.storage.beginCheckpoint(1);
    // Renewals stop, as in a process paused or cut off from the store.
    lease.stop();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await expect(owner.storage.beginCheckpoint(2)).rejects.toBeInstanceOf(ShardLeaseLostError);
    const metadata = {
      checkpointId: 1,
      timestamp: Date.now(),
      jobName: "located",
      stages: {},
      maxParallelism: 128,
      taskStates: {},
    };
    await expect(owner.storage.completeCheckpoint(metadata)).rejects.toBeInstanceOf(ShardLeaseLostError);
    expect(await storage.listCompleted()).toEqual([]);
    await owner.stop();
  });
});
