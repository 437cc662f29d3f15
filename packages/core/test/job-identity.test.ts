import { describe, expect, it } from "vitest";
import {
  type CheckpointCommitter,
  ConfigurationError,
  FileSystemCheckpointStorage,
  GeneratorSource,
  GenericWriteAheadSink,
  type KeyedProcessFunction,
  type LoggedRecords,
  StreamJob,
  type StreamJobOptions,
  silentLogger,
} from "../src/index.ts";
import { MemorySink, MemoryStore, type MemoryTxn, recordingLogger, tempDir } from "./helpers.ts";

const RECORDS = 2000;

/** Pre-commits like any sink, but its commits are refused: the job fails with its first checkpoint's transaction prepared. */
class UncommittingSink extends MemorySink<number> {
  protected override async commit(_txn: MemoryTxn): Promise<void> {
    throw new Error("commit refused by the test: the transaction stays prepared");
  }
}

/** What a write-ahead sink applied: rows, and a mark per (sink name, subtask, checkpoint) applied with them. */
class MarkedStore {
  readonly rows: number[] = [];
  readonly marks = new Set<string>();
}

/** Applies a checkpoint's rows and its mark at once; `failAfterApply` fails the commit once the rows are in. */
class MarkedWriteAheadSink extends GenericWriteAheadSink<number> {
  private readonly store: MarkedStore;
  private readonly failAfterApply: boolean;

  constructor(store: MarkedStore, failAfterApply = false) {
    const committer: CheckpointCommitter = {
      isCommitted: async (sinkId, subtask, checkpointId) => store.marks.has(`${sinkId}/${subtask}/${checkpointId}`),
      commit: async () => {},
    };
    super({ committer });
    this.store = store;
    this.failAfterApply = failAfterApply;
  }

  protected async sendValues(): Promise<void> {
    throw new Error("sendAndCommit does both");
  }

  protected override async sendAndCommit(
    records: LoggedRecords<number>,
    checkpointId: number,
    subtask: number,
    sinkId: string,
  ): Promise<void> {
    for await (const batch of records) this.store.rows.push(...batch);
    this.store.marks.add(`${sinkId}/${subtask}/${checkpointId}`);
    if (this.failAfterApply) throw new Error("commit failed by the test after its rows were applied");
  }
}

function options(location: string, overrides: Partial<StreamJobOptions> = {}): StreamJobOptions {
  return {
    name: "orders",
    checkpoint: { storage: location, intervalMs: 20 },
    restart: { maxRestarts: 0 },
    logger: silentLogger,
    batchSize: 100,
    ...overrides,
  };
}

function generator(): GeneratorSource<number> {
  return new GeneratorSource({ count: RECORDS, ratePerSecond: 20_000, generate: (i) => i });
}

/** Runs the job `orders` with sink `outx` until its first commit is refused: a completed checkpoint holds a prepared transaction. */
async function leavePreparedTransaction(location: string, store: MemoryStore): Promise<void> {
  const job = new StreamJob(options(location));
  job.fromSource(generator()).sinkTo(() => new UncommittingSink(store), { name: "outx" });
  await expect(job.execute()).rejects.toThrow(/commit refused by the test/);
  expect(store.prepared.size).toBeGreaterThan(0);
}

function sorted(values: readonly unknown[]): number[] {
  return [...(values as number[])].sort((a, b) => a - b);
}

const counter: KeyedProcessFunction<number, number, number, number> = {
  processElement(value, ctx) {
    ctx.state.update((ctx.state.value() ?? 0) + 1);
    ctx.emit(value);
  },
};

describe("I10: a checkpoint is restored only into the job that wrote it", () => {
  it("records the job's identity and every stage's uid and kind in each checkpoint's metadata", async () => {
    const location = await tempDir();
    const job = new StreamJob(options(location, { id: "orders-v1" }));
    job
      .fromSource(generator(), { uid: "gen" })
      .keyBy((v) => v % 4)
      .process(counter, { uid: "counter" })
      .sinkTo(() => new MemorySink<number>(new MemoryStore()), { name: "out" });
    await job.execute();
    const [latest] = (await new FileSystemCheckpointStorage(location).listCompleted()).slice(-1);
    expect(latest?.job).toEqual({ name: "orders", id: "orders-v1" });
    expect(latest?.stages).toEqual({
      gen: { parallelism: 1, kind: "source" },
      counter: { parallelism: 1, kind: "operator" },
      out: { parallelism: 1, kind: "sink" },
    });
  });

  it("refuses a job of another id on a location holding a checkpoint, naming both ids, and writes nothing", async () => {
    const location = await tempDir();
    const first = new StreamJob(options(location));
    first.fromSource(generator()).sinkTo(() => new MemorySink<number>(new MemoryStore()), { name: "out" });
    await first.execute();
    const store = new MemoryStore();
    const other = new StreamJob(options(location, { name: "billing" }));
    other.fromSource(generator()).sinkTo(() => new MemorySink<number>(store), { name: "out" });
    const error = await other.execute().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("id");
    expect((error as Error).message).toMatch(/"orders"/);
    expect((error as Error).message).toMatch(/"billing"/);
    expect(store.committed).toEqual([]);
  });

  it("refuses a job of the same name whose sink the checkpoint does not know, naming the sink it lacks (the review's job Y wrote 0 of its rows)", async () => {
    const location = await tempDir();
    const x = new StreamJob(options(location));
    x.fromSource(generator()).sinkTo(() => new MemorySink<number>(new MemoryStore()), { name: "outx" });
    await x.execute();
    const store = new MemoryStore();
    const y = new StreamJob(options(location));
    y.fromSource(generator()).sinkTo(() => new MemorySink<number>(store), { name: "outy" });
    const error = await y.execute().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(/sink "outx"/);
    expect((error as Error).message).toMatch(/renamedFrom/);
    expect(store.committed).toEqual([]);
  });

  it("refuses a renamed sink while the checkpoint holds its pre-committed transaction, which stays prepared", async () => {
    const location = await tempDir();
    const store = new MemoryStore();
    await leavePreparedTransaction(location, store);
    const prepared = [...store.prepared.keys()];
    const renamed = new StreamJob(options(location));
    renamed.fromSource(generator()).sinkTo(() => new MemorySink<number>(store), { name: "outy" });
    const error = await renamed.execute().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(/sink "outx"/);
    expect([...store.prepared.keys()]).toEqual(prepared);
    expect(store.committed).toEqual([]);
  });

  it("a sink declared renamedFrom its old name commits the old name's pre-committed transaction: every record once", async () => {
    const location = await tempDir();
    const store = new MemoryStore();
    await leavePreparedTransaction(location, store);
    const renamed = new StreamJob(options(location));
    renamed.fromSource(generator()).sinkTo(() => new MemorySink<number>(store), { name: "outy", renamedFrom: "outx" });
    await renamed.execute();
    expect(store.prepared.size).toBe(0);
    expect(store.open.size).toBe(0);
    expect(sorted(store.committed)).toEqual(Array.from({ length: RECORDS }, (_, i) => i));
    // The next checkpoints are the new name's: a restart needs renamedFrom no longer.
    const [latest] = (await new FileSystemCheckpointStorage(location).listCompleted()).slice(-1);
    expect(Object.keys(latest?.stages ?? {})).toContain("outy");
    expect(Object.keys(latest?.stages ?? {})).not.toContain("outx");
  });

  it("refuses to drop an operator's state unless allowNonRestoredState names it, and then says what it drops", async () => {
    const location = await tempDir();
    const store = new MemoryStore();
    const x = new StreamJob(options(location));
    x.fromSource(generator(), { uid: "gen" })
      .keyBy((v) => v % 4)
      .process(counter, { uid: "counter" })
      .sinkTo(() => new MemorySink<number>(store), { name: "out" });
    await x.execute();

    const without = new StreamJob(options(location));
    without.fromSource(generator(), { uid: "gen" }).sinkTo(() => new MemorySink<number>(store), { name: "out" });
    const error = await without.execute().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("allowNonRestoredState");
    expect((error as Error).message).toMatch(/operator "counter"/);

    const logger = recordingLogger();
    const infos: string[] = [];
    const allowed = new StreamJob(
      options(location, {
        allowNonRestoredState: ["counter"],
        logger: { ...logger, info: (m) => infos.push(m) },
      }),
    );
    allowed.fromSource(generator(), { uid: "gen" }).sinkTo(() => new MemorySink<number>(store), { name: "out" });
    await allowed.execute();
    expect([...infos, ...logger.warnings].join("\n")).toMatch(/dropping the state of operator "counter"/);
  });

  it("never drops a sink's state, even when allowNonRestoredState names it", async () => {
    const location = await tempDir();
    const store = new MemoryStore();
    await leavePreparedTransaction(location, store);
    const job = new StreamJob(options(location, { allowNonRestoredState: ["outx"] }));
    job.fromSource(generator()).sinkTo(() => new MemorySink<number>(store), { name: "outy" });
    const error = await job.execute().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(/sink "outx"/);
    expect(store.prepared.size).toBeGreaterThan(0);
  });

  it("refuses a stage whose kind changed under the same uid", async () => {
    const location = await tempDir();
    const store = new MemoryStore();
    const x = new StreamJob(options(location));
    x.fromSource(generator(), { uid: "gen" })
      .keyBy((v) => v % 4)
      .process(counter, { uid: "step" })
      .sinkTo(() => new MemorySink<number>(store), { name: "out" });
    await x.execute();
    const y = new StreamJob(options(location));
    y.fromSource(generator(), { uid: "step" }).sinkTo(() => new MemorySink<number>(store), { name: "out" });
    const error = await y.execute().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(/"step" is an operator in checkpoint \d+ and a source in this job/);
  });

  it("a renamed write-ahead sink replays the old name's logged checkpoint under the old name's mark: applied once, never twice", async () => {
    const location = await tempDir();
    const store = new MarkedStore();
    const x = new StreamJob(options(location));
    x.fromSource(generator()).sinkTo(() => new MarkedWriteAheadSink(store, true), { name: "outx" });
    await expect(x.execute()).rejects.toThrow(/after its rows were applied/);
    expect(store.rows.length).toBeGreaterThan(0);
    const renamed = new StreamJob(options(location));
    renamed
      .fromSource(generator())
      .sinkTo(() => new MarkedWriteAheadSink(store), { name: "outy", renamedFrom: "outx" });
    await renamed.execute();
    expect(sorted(store.rows)).toEqual(Array.from({ length: RECORDS }, (_, i) => i));
  });
});
