// I9 for the Kafka sink, against the real broker: Kafka needs no fence store of its own. A
// successor's recovery runs InitProducerId on the transactional ids the old owner may still
// write on, which fences the old owner's producer: its later send and its commit are refused,
// the sink turns that into ShardFencedError (the attempt fails and the process waits for its
// shard again), and a read_committed reader sees none of it. An old owner beginning a new
// transaction after the takeover (InitProducerId on an id, which no broker can refuse) does so
// only on ids of its own epoch, so it never aborts a transaction of its successor.

import { ShardFencedError, type Sink, type SinkContext, type TwoPhaseCommitState } from "@exactly/core";
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import { sinkContext } from "@exactly/testkit/sink-context";
import { describe, expect, it } from "vitest";
import { KafkaTransactionalSink } from "../src/index.ts";
import { openKafkaConnection } from "../src/open-connection.ts";
import { slotBaseOf, transactionalIdOf } from "../src/transaction-ids.ts";
import { createTopic, newKafka, partitionEnds, readCommitted } from "./helpers.ts";

interface Row {
  id: number;
}

const TIMEOUT_MS = 60_000;

function sinkOf(topic: string, prefix: string): KafkaTransactionalSink<Row> {
  return new KafkaTransactionalSink<Row>({
    brokers: kafkaBrokers(),
    topic,
    transactionalIdPrefix: prefix,
    transactionTimeoutMs: TIMEOUT_MS,
  });
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

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

function causeOf<E>(error: unknown, type: abstract new (...args: never[]) => E): E | undefined {
  for (let e = error; e instanceof Error; e = e.cause) if (e instanceof type) return e;
  return undefined;
}

async function checkpoint(sink: Sink<Row>, id: number): Promise<unknown> {
  const state = await sink.snapshotState(id);
  await sink.notifyCheckpointComplete(id);
  return state;
}

/** Ids a read_committed reader sees, after checking that no transaction is left open on the partition. */
async function committedIds(topic: string): Promise<number[]> {
  const ids = (await readCommitted(topic, 1)).map((v) => (JSON.parse(v) as Row).id);
  const [end] = await partitionEnds(topic, 1);
  expect(end?.lastStableOffset).toBe(end?.highWatermark);
  return ids.sort((a, b) => a - b);
}

async function freshTopic(label: string): Promise<{ topic: string; prefix: string }> {
  const topic = uniqueName(`fence-${label}`);
  await createTopic(newKafka(kafkaBrokers()), topic, 1);
  return { topic, prefix: uniqueName(`fence-${label}`) };
}

describe("I9: a successor's InitProducerId fences the old owner's producer", () => {
  it("the old owner's open transaction on an id the successor's recovery re-initialised: its send and its commit are refused, a read_committed reader sees none of it", async () => {
    const { topic, prefix } = await freshTopic("claim");
    // The old owner at epoch 1, as its sink began its transaction for checkpoint 2 on slot 0 of its epoch.
    const transactionalId = transactionalIdOf(prefix, 0, slotBaseOf(1));
    const connection = openKafkaConnection({ brokers: kafkaBrokers() });
    try {
      await connection.connect();
      const old = await connection.beginTransaction({ transactionalId, transactionTimeoutMs: TIMEOUT_MS });
      await old.sendBatch([{ topic, messages: [{ value: JSON.stringify({ id: 1 }) }] }]);

      // The successor restores checkpoint 1, which names that transaction as the one open then.
      const restored: TwoPhaseCommitState = {
        pending: [],
        current: {
          txn: { transactionalId, producerId: old.producerId, epoch: old.epoch, subtask: 0, slot: slotBaseOf(1) },
          startedAt: Date.now(),
        },
      };
      const successor = sinkOf(topic, prefix);
      await successor.open(
        owned(2, { restoredCheckpointId: 1, restoredStates: [restored], allRestoredStates: [restored] }),
      );
      try {
        expect(
          await rejection(old.sendBatch([{ topic, messages: [{ value: JSON.stringify({ id: 2 }) }] }])),
        ).toBeTruthy();
        expect(await rejection(connection.endTransaction(old, true))).toBeTruthy();

        await successor.writeBatch(rows([3]));
        await checkpoint(successor, 2);
        expect(await committedIds(topic)).toEqual([3]);
      } finally {
        await successor.close();
      }
    } finally {
      await connection.close();
    }
  });

  it("the old owner's sink: its pre-commit after the successor opened fails with ShardFencedError, and none of its records shows", async () => {
    const { topic, prefix } = await freshTopic("sink");
    // Subtask 1 of 2 at epoch 1; after the takeover one subtask restores and cleans up index 1.
    const old = sinkOf(topic, prefix);
    await old.open(owned(1, { subtask: 1, parallelism: 2 }));
    await old.writeBatch(rows([10]));
    const state = await checkpoint(old, 1);
    await old.writeBatch(rows([11]));

    const successor = sinkOf(topic, prefix);
    await successor.open(
      owned(2, {
        subtask: 0,
        parallelism: 1,
        previousParallelism: 2,
        restoredCheckpointId: 1,
        restoredStates: [state],
        allRestoredStates: [state],
      }),
    );
    try {
      const failure = await rejection(old.snapshotState(2));
      expect(causeOf(failure, ShardFencedError)?.epoch).toBe(1);
      await old.close().catch(() => {});

      await successor.writeBatch(rows([12]));
      await checkpoint(successor, 2);
      expect(await committedIds(topic)).toEqual([10, 12]);
    } finally {
      await successor.close();
    }
  });

  it("an old owner beginning transactions after the takeover re-initialises only ids of its own epoch: the successor's transaction commits", async () => {
    const { topic, prefix } = await freshTopic("begin");
    const successor = sinkOf(topic, prefix);
    await successor.open(owned(2));
    const connection = openKafkaConnection({ brokers: kafkaBrokers() });
    try {
      await connection.connect();
      await successor.writeBatch(rows([1]));
      // The old owner at epoch 1 begins its next transactions, on the lowest slots of its epoch,
      // as its sink does (InitProducerId first), and writes into them.
      const zombies = [];
      for (let slot = 0; slot < 3; slot++) {
        const transactionalId = transactionalIdOf(prefix, 0, slotBaseOf(1) + slot);
        const zombie = await connection.beginTransaction({
          transactionalId,
          transactionTimeoutMs: TIMEOUT_MS,
        });
        await zombie.sendBatch([{ topic, messages: [{ value: JSON.stringify({ id: 100 + slot }) }] }]);
        zombies.push(zombie);
      }
      // Not one of them is the successor's: its pre-commit and commit go through.
      await successor.writeBatch(rows([2]));
      const state = (await checkpoint(successor, 1)) as TwoPhaseCommitState;
      // The successor's transaction was on the first slot of its own epoch.
      expect((state.pending[0]?.txn as { transactionalId?: string } | undefined)?.transactionalId).toBe(
        transactionalIdOf(prefix, 0, slotBaseOf(2)),
      );
      // The old owner's attempt fails (its lease is lost) and closing aborts what it had open.
      for (const zombie of zombies) await zombie.abort();
      expect(await committedIds(topic)).toEqual([1, 2]);
    } finally {
      await connection.close();
      await successor.close();
    }
  });
});
