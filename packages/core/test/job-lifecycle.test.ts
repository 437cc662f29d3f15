import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  ArraySource,
  ConfigurationError,
  FileSource,
  FileSystemCheckpointStorage,
  GeneratorSource,
  JobFailedError,
  RecordWriteError,
  StreamJob,
  silentLogger,
} from "../src/index.ts";
import { MemorySink, MemoryStore, type MemoryTxn, recordingLogger, tempDir } from "./helpers.ts";

/**
 * Throws (in-process, not a crash) once, on the first write after `after` records: a lost
 * connection, which the restart strategy restarts (a plain error in a record write would be a
 * bad record, which fails the job).
 */
class FailingOnceSink extends MemorySink<number> {
  static written = 0;
  static failed = false;
  static after = 0;
  protected override writeRecord(txn: MemoryTxn, record: number): void {
    if (!FailingOnceSink.failed && ++FailingOnceSink.written > FailingOnceSink.after) {
      FailingOnceSink.failed = true;
      throw Object.assign(new Error("injected failure: connection reset"), { code: "ECONNRESET" });
    }
    super.writeRecord(txn, record);
  }
}

describe("job lifecycle", () => {
  it("stops gracefully: a final checkpoint, its commit, then the end — nothing read is left uncommitted", async () => {
    const store = new MemoryStore();
    const job = new StreamJob({
      name: "stop",
      parallelism: 2,
      checkpoint: { storage: await tempDir(), intervalMs: 50 },
      logger: silentLogger,
    });
    job
      .fromSource(new GeneratorSource({ ratePerSecond: 20_000, generate: (i) => i }))
      .sinkTo(() => new MemorySink<number>(store), { name: "mem" });
    const client = job.start();
    await new Promise((r) => setTimeout(r, 400));
    const result = await client.stop();
    const read = client.execution?.recordsRead ?? 0;
    expect(read).toBeGreaterThan(0);
    expect(result.checkpointsCompleted).toBeGreaterThan(1);
    expect(store.committed.length).toBe(read);
    expect(new Set(store.committed).size).toBe(read);
    expect(store.open.size + store.prepared.size).toBe(0);
  });

  it("I3: restarts from the latest checkpoint after an in-process failure, with backoff, and stays exactly once", async () => {
    const store = new MemoryStore();
    FailingOnceSink.written = 0;
    FailingOnceSink.failed = false;
    FailingOnceSink.after = 3000;
    const restarts: number[] = [];
    const job = new StreamJob({
      name: "restart",
      checkpoint: { storage: await tempDir(), intervalMs: 20 },
      restart: { initialDelayMs: 10, jitter: 0 },
      logger: silentLogger,
      batchSize: 100,
    });
    job
      .fromSource(new GeneratorSource({ count: 8000, ratePerSecond: 40_000, generate: (i) => i }))
      .sinkTo(() => new FailingOnceSink(store), { name: "mem" });
    const result = await job.execute({ onRestart: ({ delayMs }) => restarts.push(delayMs) });
    expect(result.restarts).toBe(1);
    expect(restarts).toEqual([10]);
    expect([...store.committed].sort((a, b) => (a as number) - (b as number))).toEqual(
      Array.from({ length: 8000 }, (_, i) => i),
    );
  });

  it("a checkpoint storage unreachable while the job restarts fails that attempt, and the next one restores", async () => {
    const store = new MemoryStore();
    FailingOnceSink.written = 0;
    FailingOnceSink.failed = false;
    FailingOnceSink.after = 3000;
    // The storage answers every call but the restarted attempt's first loadLatest (S3 restarting, say).
    const storage = new FileSystemCheckpointStorage(await tempDir());
    let loads = 0;
    const flaky = Object.assign(Object.create(storage) as FileSystemCheckpointStorage, {
      loadLatest: () => {
        loads++;
        if (loads === 2)
          return Promise.reject(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
        return storage.loadLatest();
      },
    });
    const job = new StreamJob({
      name: "storage-down",
      checkpoint: { storage: flaky, intervalMs: 20 },
      restart: { initialDelayMs: 10 },
      logger: silentLogger,
      batchSize: 100,
    });
    job
      .fromSource(new GeneratorSource({ count: 8000, ratePerSecond: 40_000, generate: (i) => i }))
      .sinkTo(() => new FailingOnceSink(store), { name: "mem" });
    const result = await job.execute();
    expect(loads).toBe(3);
    expect(result.restarts).toBe(2);
    expect([...store.committed].sort((a, b) => (a as number) - (b as number))).toEqual(
      Array.from({ length: 8000 }, (_, i) => i),
    );
  });

  it("fails on a record that cannot be written, naming its source position, and commits nothing of that checkpoint", async () => {
    const store = new MemoryStore();
    class RejectingSink extends MemorySink<number> {
      protected override writeRecord(txn: MemoryTxn, record: number): void {
        if (record === 42) throw new Error("value 42 violates a constraint");
        super.writeRecord(txn, record);
      }
    }
    const job = new StreamJob({
      name: "bad-record",
      checkpoint: { storage: await tempDir(), intervalMs: 1000 },
      restart: { maxRestarts: 2, initialDelayMs: 1 },
      logger: silentLogger,
    });
    job
      .fromSource(
        new ArraySource(
          Array.from({ length: 100 }, (_, i) => i),
          { name: "numbers" },
        ),
      )
      .sinkTo(() => new RejectingSink(store), { name: "mem" });
    const error = await job.execute().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobFailedError);
    const cause = (error as JobFailedError).cause;
    expect(cause).toBeInstanceOf(RecordWriteError);
    expect((cause as RecordWriteError).message).toContain("numbers[0]@42");
    expect(store.committed).toEqual([]);
  });

  it("a failure at the final checkpoint's barrier fails the job at once: every task of the attempt settles, none waits for a wake-up that came already", async () => {
    const store = new MemoryStore();
    class FailingAtFinalBarrier extends MemorySink<number> {
      protected override async preCommit(txn: MemoryTxn): Promise<void> {
        throw new Error(`cannot pre-commit ${txn.id}`);
      }
    }
    const logger = recordingLogger();
    const job = new StreamJob({
      name: "final-barrier",
      parallelism: 2,
      // No checkpoint before the final one: the failure comes while the source waits for it.
      checkpoint: { storage: await tempDir(), intervalMs: 60_000 },
      restart: { maxRestarts: 0 },
      logger,
    });
    job
      .fromSource(new GeneratorSource({ count: 1000, splits: 2, generate: (i) => i }))
      .sinkTo(() => new FailingAtFinalBarrier(store), { name: "mem" });
    const error = await job.execute().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobFailedError);
    expect(String((error as JobFailedError).cause)).toContain("cannot pre-commit");
    // Before the fix the source task sat until the 120 s settle bound, which says so here.
    expect(logger.warnings.filter((w) => w.includes("still busy"))).toEqual([]);
    expect(store.committed).toEqual([]);
  });

  it("I7: refuses two sinks with one name, naming the setting", () => {
    const job = new StreamJob({ name: "dup", checkpoint: { storage: "/nonexistent" } });
    const stream = job.fromSource(new ArraySource([1]));
    stream.sinkTo(() => new MemorySink(new MemoryStore()), { name: "out" });
    const error = (() => {
      try {
        stream.sinkTo(() => new MemorySink(new MemoryStore()), { name: "out" });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("sink name");
  });

  it("I7: refuses an EXACTLY_ONCE sink in a job with at-least-once checkpointing, naming both settings", async () => {
    const store = new MemoryStore();
    const job = new StreamJob({
      name: "unaligned",
      checkpointing: "at-least-once",
      checkpoint: { storage: await tempDir() },
      logger: silentLogger,
    });
    job.fromSource(new ArraySource([1, 2, 3])).sinkTo(() => new MemorySink<number>(store), { name: "mem" });
    const error = await job.execute().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("checkpointing");
    expect((error as Error).message).toContain("sink mem has guarantee EXACTLY_ONCE");
    expect(store.log).toEqual([]); // refused before the sink opened

    const bad = (() => {
      try {
        return new StreamJob({ name: "x", checkpointing: "aligned" as never, checkpoint: { storage: "/nonexistent" } });
      } catch (e) {
        return e;
      }
    })();
    expect((bad as ConfigurationError).setting).toBe("checkpointing");
  });

  it("reads newline-delimited files with byte offsets as positions, and resumes from them", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "a.txt"), "one\ntwo\nthree\n");
    await writeFile(join(dir, "b.txt"), "four\nfive");
    const source = new FileSource({ paths: [dir] });
    const reader = source.createReader({ subtask: 0, parallelism: 1, restoredPositions: undefined });
    await reader.open?.();
    const first = await reader.poll(2);
    expect(first?.values).toEqual(["one", "two"]);
    expect(first?.positions.map((p) => p.offset)).toEqual([0, 4]);
    const positions = reader.snapshotPositions(1);
    await reader.close?.();

    const resumed = source.createReader({
      subtask: 0,
      parallelism: 1,
      restoredPositions: new Map(Object.entries(positions)),
    });
    await resumed.open?.();
    const rest: string[] = [];
    for (let batch = await resumed.poll(10); batch; batch = await resumed.poll(10)) rest.push(...batch.values);
    expect(rest).toEqual(["three", "four", "five"]);
  });
});
