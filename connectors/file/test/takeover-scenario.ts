/**
 * I9 for the file sinks, shared by local disk and S3: an owner at epoch 1 and its successor
 * at epoch 2 run in one process over the same output. The old owner's commit of a checkpoint
 * completed before the takeover is harmless (the successor published it already); what it
 * writes and pre-commits after the takeover is never published (only a completed checkpoint
 * publishes, and the checkpoint head completes nothing of an old epoch); and its in-progress
 * files or uploads are gone after the successor's next recovery at the latest.
 */
import type { Sink, SinkContext } from "@exactly/core";
import { sinkContext } from "@exactly/testkit/sink-context";
import { expect } from "vitest";

export interface Row {
  id: number;
}

export interface TakeoverTarget {
  /** A new sink over the shared output. */
  sink(): Sink<Row>;
  /** Every id a reader of the published output sees, once per occurrence, sorted. */
  published(): Promise<number[]>;
  /** In-progress files or open uploads of the sink: unpublished work that lingers. */
  unpublished(): Promise<number>;
}

function owned(epoch: number, overrides: Partial<SinkContext> = {}): SinkContext {
  return sinkContext("fenced", { ownership: { shard: { index: 0, count: 1 }, epoch }, ...overrides });
}

function rows(ids: number[]) {
  return {
    values: ids.map((id): Row => ({ id })),
    positions: ids.map((offset) => ({ source: "s", split: "0", offset })),
    timestamps: undefined,
  };
}

function restoring(epoch: number, checkpointId: number, state: unknown): SinkContext {
  return owned(epoch, { restoredCheckpointId: checkpointId, restoredStates: [state], allRestoredStates: [state] });
}

export async function runTakeover(target: TakeoverTarget): Promise<void> {
  // The old owner pre-commits checkpoint 1, which completes; the news has not reached it yet.
  const old = target.sink();
  await old.open(owned(1));
  await old.writeBatch(rows([1, 2]));
  const first = await old.snapshotState(1);

  // The successor restores checkpoint 1 and publishes what it pre-committed.
  const successor = target.sink();
  await successor.open(restoring(2, 1, first));
  expect(await target.published()).toEqual([1, 2]);

  // The old owner's commit of checkpoint 1 arrives late: harmless, nothing shows twice.
  await old.notifyCheckpointComplete(1);
  expect(await target.published()).toEqual([1, 2]);

  // After the takeover the old owner writes, pre-commits checkpoint 2 and writes on; checkpoint
  // 2 of epoch 1 never completes (the head refuses it), so nothing of it is published.
  await old.writeBatch(rows([3, 4]));
  await old.snapshotState(2);
  await old.writeBatch(rows([5]));

  // The successor goes on: its checkpoint 3 completes and publishes only its own records.
  await successor.writeBatch(rows([10]));
  const third = await successor.snapshotState(3);
  await successor.notifyCheckpointComplete(3);
  expect(await target.published()).toEqual([1, 2, 10]);
  // The old owner's work lingers, unpublished, until a recovery owns it.
  expect(await target.unpublished()).toBeGreaterThan(0);

  // The successor's next recovery (a restart at the same epoch) removes it, though the old
  // owner never closed: a paused process's files are cleaned up without it.
  await successor.close();
  const next = target.sink();
  await next.open(restoring(2, 3, third));
  try {
    expect(await target.unpublished()).toBe(0);
    expect(await target.published()).toEqual([1, 2, 10]);
    // The old owner's attempt fails at last and it closes: aborting what is already gone is harmless.
    await old.close();
    expect(await target.published()).toEqual([1, 2, 10]);
    expect(await target.unpublished()).toBe(0);
  } finally {
    await next.close();
  }
}
