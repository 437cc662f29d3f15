import { describe, expect, it } from "vitest";
import { CommitFailedError, TransactionLostError, TransientError } from "../src/index.ts";
import { batchOf, MemorySink, MemoryStore, type MemoryTxn, recordingLogger, sinkContextOnDisk } from "./helpers.ts";

class FlakySink extends MemorySink<number> {
  failures: Error[] = [];
  protected override async commit(txn: MemoryTxn): Promise<void> {
    const failure = this.failures.shift();
    if (failure) throw failure;
    await super.commit(txn);
  }
}

describe("TwoPhaseCommitSink", () => {
  it("I5: commits every pending transaction up to the completed checkpoint, in order, once", async () => {
    const store = new MemoryStore();
    const sink = new MemorySink<number>(store);
    await sink.open(await sinkContextOnDisk());
    for (const id of [1, 2, 3]) {
      await sink.writeBatch(batchOf([id * 10, id * 10 + 1]));
      await sink.snapshotState(id);
    }
    await sink.notifyCheckpointComplete(2);
    expect(store.log.filter((l) => l.startsWith("commit"))).toEqual(["commit s-0-1", "commit s-0-2"]);
    // A duplicate and a late notification change nothing.
    await sink.notifyCheckpointComplete(2);
    await sink.notifyCheckpointComplete(1);
    expect(store.committed).toEqual([10, 11, 20, 21]);
    // An aborted checkpoint's transaction stays pending and goes with the next completed one.
    await sink.notifyCheckpointAborted(3);
    await sink.writeBatch(batchOf([40]));
    await sink.snapshotState(4);
    await sink.notifyCheckpointComplete(4);
    expect(store.committed).toEqual([10, 11, 20, 21, 30, 31, 40]);
    expect(store.log.filter((l) => l.startsWith("commit"))).toEqual([
      "commit s-0-1",
      "commit s-0-2",
      "commit s-0-3",
      "commit s-0-4",
    ]);
  });

  it("does not pre-commit or commit an empty transaction, and keeps it open", async () => {
    const store = new MemoryStore();
    const sink = new MemorySink<number>(store);
    await sink.open(await sinkContextOnDisk());
    const state = await sink.snapshotState(1);
    await sink.notifyCheckpointComplete(1);
    expect(state.pending).toEqual([]);
    expect(state.current?.txn).toEqual({ id: "s-0-1" });
    expect(store.log).toEqual(["begin s-0-1"]);
    await sink.writeBatch(batchOf([7]));
    await sink.snapshotState(2);
    await sink.notifyCheckpointComplete(2);
    expect(store.committed).toEqual([7]);
    expect(store.log).toEqual(["begin s-0-1", "precommit s-0-1", "begin s-0-3", "commit s-0-1"]);
  });

  it("I2: recovers: commits restored pending transactions, aborts the open one", async () => {
    const store = new MemoryStore();
    const first = new MemorySink<number>(store);
    await first.open(await sinkContextOnDisk());
    await first.writeBatch(batchOf([1, 2]));
    const state = await first.snapshotState(1);
    await first.writeBatch(batchOf([3]));
    // The process dies here: checkpoint 1 is durable, nothing committed, s-0-2 open.
    const second = new MemorySink<number>(store);
    await second.open(
      await sinkContextOnDisk({ restoredCheckpointId: 1, restoredStates: [state], allRestoredStates: [state] }),
    );
    expect(store.committed).toEqual([1, 2]);
    expect(store.log).toContain("abort s-0-2");
    // Committing again (recovery after a crash mid-commit) is harmless.
    const third = new MemorySink<number>(store);
    await third.open(
      await sinkContextOnDisk({ restoredCheckpointId: 1, restoredStates: [state], allRestoredStates: [state] }),
    );
    expect(store.committed).toEqual([1, 2]);
  });

  it("retries transient commit errors and fails on permanent ones with the checkpoint id", async () => {
    const store = new MemoryStore();
    const sink = new FlakySink(store, {});
    await sink.open(await sinkContextOnDisk());
    sink.failures = [new TransientError("blip"), new TransientError("blip again")];
    await sink.writeBatch(batchOf([1]));
    await sink.snapshotState(1);
    await sink.notifyCheckpointComplete(1);
    expect(store.committed).toEqual([1]);

    sink.failures = [new Error("constraint violated")];
    await sink.writeBatch(batchOf([2]));
    await sink.snapshotState(2);
    const error = await sink.notifyCheckpointComplete(2).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommitFailedError);
    expect((error as CommitFailedError).checkpointId).toBe(2);
  });

  it("reports a transaction older than its timeout as possible data loss, never silently", async () => {
    const store = new MemoryStore();
    const logger = recordingLogger();
    const sink = new FlakySink(store, { transactionTimeoutMs: 1 });
    await sink.open(await sinkContextOnDisk({ logger }));
    await sink.writeBatch(batchOf([1]));
    await sink.snapshotState(1);
    await new Promise((r) => setTimeout(r, 20));
    await sink.notifyCheckpointComplete(1);
    expect(logger.warnings.some((w) => w.includes("possible data loss"))).toBe(true);

    sink.failures = [new Error("transaction timed out on the server")];
    await sink.writeBatch(batchOf([2]));
    await sink.snapshotState(2);
    await new Promise((r) => setTimeout(r, 20));
    const error = await sink.notifyCheckpointComplete(2).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransactionLostError);
    expect((error as TransactionLostError).code).toBe("TRANSACTION_LOST");
  });

  it("commits while a write is still in progress (commits never queue behind writes)", async () => {
    const store = new MemoryStore();
    let release: () => void = () => {};
    class SlowWriteSink extends MemorySink<number> {
      slow = false;
      protected override writeRecord(txn: MemoryTxn, record: number): void | Promise<void> {
        super.writeRecord(txn, record);
        if (this.slow) return new Promise<void>((r) => (release = r));
      }
    }
    const sink = new SlowWriteSink(store);
    await sink.open(await sinkContextOnDisk());
    await sink.writeBatch(batchOf([1]));
    await sink.snapshotState(1);
    sink.slow = true;
    let writeDone = false;
    const write = sink.writeBatch(batchOf([2])).then(() => {
      writeDone = true;
    });
    await sink.notifyCheckpointComplete(1);
    expect(store.committed).toEqual([1]);
    expect(writeDone).toBe(false);
    release();
    await write;
  });
});
