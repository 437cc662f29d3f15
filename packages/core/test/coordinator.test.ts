import { describe, expect, it } from "vitest";
import {
  type CheckpointMetadata,
  type CheckpointStorage,
  FileSystemCheckpointStorage,
  GeneratorSource,
  type LogStore,
  type RestoredCheckpoint,
  type StoredTaskState,
  StreamJob,
  silentLogger,
} from "../src/index.ts";
import { MemorySink, MemoryStore, type MemoryTxn, tempDir } from "./helpers.ts";

/** Storage that notes in a shared log when each checkpoint became durable. */
class LoggingStorage implements CheckpointStorage {
  private readonly inner: FileSystemCheckpointStorage;
  private readonly log: string[];
  constructor(dir: string, log: string[]) {
    this.inner = new FileSystemCheckpointStorage(dir);
    this.log = log;
  }
  highestCheckpointId(): Promise<number> {
    return this.inner.highestCheckpointId();
  }
  beginCheckpoint(id: number): Promise<void> {
    return this.inner.beginCheckpoint(id);
  }
  writeTaskState(id: number, key: string, state: unknown): Promise<StoredTaskState> {
    return this.inner.writeTaskState(id, key, state);
  }
  async completeCheckpoint(metadata: CheckpointMetadata): Promise<void> {
    await this.inner.completeCheckpoint(metadata);
    this.log.push(`durable ${metadata.checkpointId}`);
  }
  discardCheckpoint(id: number): Promise<void> {
    return this.inner.discardCheckpoint(id);
  }
  loadLatest(): Promise<RestoredCheckpoint | undefined> {
    return this.inner.loadLatest();
  }
  listCompleted(): Promise<CheckpointMetadata[]> {
    return this.inner.listCompleted();
  }
  logStore(namespace: string): LogStore {
    return this.inner.logStore(namespace);
  }
}

/** Logs which checkpoint each transaction was pre-committed in, and aborted checkpoints. */
class ObservedSink extends MemorySink<number> {
  private readonly slowCheckpoint: number | undefined;
  constructor(store: MemoryStore, slowCheckpoint?: number) {
    super(store);
    this.slowCheckpoint = slowCheckpoint;
  }
  override async snapshotState(checkpointId: number) {
    if (checkpointId === this.slowCheckpoint) await new Promise((r) => setTimeout(r, 400));
    const state = await super.snapshotState(checkpointId);
    const last = state.pending.at(-1);
    if (last?.checkpointId === checkpointId)
      this.store.log.push(`pending ${(last.txn as MemoryTxn).id} in ${checkpointId}`);
    return state;
  }
  override async notifyCheckpointAborted(checkpointId: number): Promise<void> {
    this.store.log.push(`aborted ${checkpointId}`);
  }
}

async function runJob(store: MemoryStore, options: { slowCheckpoint?: number; timeoutMs?: number } = {}) {
  const dir = await tempDir();
  const job = new StreamJob({
    name: "coordinator",
    parallelism: 2,
    checkpoint: { storage: new LoggingStorage(dir, store.log), intervalMs: 30, timeoutMs: options.timeoutMs ?? 60_000 },
    logger: silentLogger,
    batchSize: 100,
  });
  job
    .fromSource(new GeneratorSource({ count: 6000, ratePerSecond: 12_000, generate: (i) => i }))
    .sinkTo(() => new ObservedSink(store, options.slowCheckpoint), { name: "observed" });
  return job.execute({ onCommitted: (id) => store.log.push(`committed ${id}`) });
}

describe("CheckpointCoordinator", () => {
  it("I1: commits a transaction only after the checkpoint it belongs to is durable", async () => {
    const store = new MemoryStore();
    const result = await runJob(store);
    expect(result.checkpointsCompleted).toBeGreaterThan(3);
    const commits = store.log.filter((l) => l.startsWith("commit "));
    expect(commits.length).toBeGreaterThan(3);
    for (const commit of commits) {
      const txn = commit.slice("commit ".length);
      const pending = store.log.find((l) => l.startsWith(`pending ${txn} in `)) as string;
      const checkpoint = Number(pending.split(" in ")[1]);
      const durableAt = store.log.indexOf(`durable ${checkpoint}`);
      expect(durableAt, `checkpoint ${checkpoint} must be durable before ${commit}`).toBeGreaterThanOrEqual(0);
      expect(durableAt).toBeLessThan(store.log.indexOf(commit));
    }
    expect([...store.committed].sort((a, b) => (a as number) - (b as number))).toEqual(
      Array.from({ length: 6000 }, (_, i) => i),
    );
    // onCommitted(n) is told only once every transaction pending in a checkpoint ≤ n is committed.
    const committedEvents = store.log.filter((l) => l.startsWith("committed "));
    expect(committedEvents.length).toBeGreaterThan(3);
    for (const event of committedEvents) {
      const n = Number(event.slice("committed ".length));
      for (const pending of store.log.filter((l) => l.startsWith("pending "))) {
        const [, txn, , checkpoint] = pending.split(" ");
        if (Number(checkpoint) > n) continue;
        expect(store.log.indexOf(`commit ${txn}`), `${txn} before ${event}`).toBeLessThan(store.log.indexOf(event));
        expect(store.log.indexOf(`commit ${txn}`)).toBeGreaterThanOrEqual(0);
      }
    }
  });

  it("I2: declines a checkpoint that times out, and commits its transactions with the next one", async () => {
    const store = new MemoryStore();
    await runJob(store, { slowCheckpoint: 3, timeoutMs: 150 });
    expect(store.log).toContain("aborted 3");
    expect(store.log).not.toContain("durable 3");
    // What was pre-committed in the declined checkpoint is committed after a later one is durable.
    const pendingIn3 = store.log.filter((l) => l.endsWith(" in 3")).map((l) => l.split(" ")[1]);
    expect(pendingIn3.length).toBeGreaterThan(0);
    for (const txn of pendingIn3) {
      const commitAt = store.log.indexOf(`commit ${txn}`);
      expect(commitAt).toBeGreaterThan(store.log.findIndex((l) => /^durable ([4-9]|\d\d)/.test(l)));
    }
    expect(new Set(store.committed).size).toBe(6000);
    expect(store.committed.length).toBe(6000);
  });
});
