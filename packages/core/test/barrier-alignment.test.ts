import { describe, expect, it } from "vitest";
import { type CheckpointingMode, FileSystemCheckpointStorage, noMetrics } from "../src/index.ts";
import { KeyedProcessOperator } from "../src/operators/keyed-process.ts";
import { Collector } from "../src/operators/operator.ts";
import type { StreamElement } from "../src/records.ts";
import type { Edge } from "../src/runtime/api/job-graph.ts";
import { Channel, InputGate } from "../src/runtime/engine/channel.ts";
import { TaskOutput } from "../src/runtime/engine/output.ts";
import { OperatorTask } from "../src/runtime/engine/tasks.ts";
import { batchOf, tempDir } from "./helpers.ts";

type Element = StreamElement<unknown>;
const tick = () => new Promise((r) => setTimeout(r, 10));

/** An operator subtask with two inputs, counting its records in keyed state, and what it sends on. */
async function twoInputOperator(checkpointing: CheckpointingMode) {
  const storage = new FileSystemCheckpointStorage(await tempDir());
  await storage.beginCheckpoint(1);
  const inputs = [new Channel<Element>(16), new Channel<Element>(16)];
  const downstream = new Channel<Element>(64);
  const acks: Array<{ id: number; handle: string }> = [];
  const operator = new KeyedProcessOperator<string, string, string, number>(() => "k", {
    processElement(value, ctx) {
      ctx.state.update((ctx.state.value() ?? 0) + 1);
      ctx.emit(value);
    },
  });
  operator.open({ subtask: 0, parallelism: 1, maxParallelism: 128, keyGroups: { start: 0, end: 127 }, restored: [] });
  const edge = { partitioning: { kind: "forward" }, chain: [] } as unknown as Edge;
  const labels = { stage: "op", subtask: 0 };
  const task = new OperatorTask({
    checkpointing,
    key: "op/0",
    storage,
    acks: {
      acknowledge: (id, _key, stored) => acks.push({ id, handle: stored.handle }),
      declineState: (_id, _key, error) => {
        throw error;
      },
    },
    gate: new InputGate(inputs),
    labels,
    metrics: noMetrics,
    operator: operator as never,
    output: new TaskOutput([{ edge, channels: [downstream] }], labels, { stages: [], maxParallelism: 128 }, noMetrics),
    collector: new Collector(false),
  });
  const running = task.run();
  const seen = () => {
    const out: unknown[] = [];
    for (let e = downstream.poll(); e; e = downstream.poll()) out.push(e.kind === "batch" ? e.batch.values : e.kind);
    return out;
  };
  /** The snapshot of checkpoint 1, once acknowledged: each key's count. */
  const snapshot = async () => {
    await storage.completeCheckpoint({
      checkpointId: 1,
      timestamp: 0,
      jobName: "t",
      stages: {},
      maxParallelism: 128,
      taskStates: { "op/0": acks[0]?.handle as string },
    });
    const state = (await storage.loadLatest())?.states.get("op/0") as { groups: Record<string, [string, number][]> };
    return Object.values(state.groups).flat();
  };
  return { inputs, acks, running, seen, snapshot, storage };
}

describe("barrier alignment", () => {
  it("holds back an input that delivered barrier n until every input has, and snapshots exactly what came before", async () => {
    const { inputs, acks, running, seen, snapshot, storage } = await twoInputOperator("exactly-once");

    inputs[0]?.push({ kind: "batch", batch: batchOf(["a0"]) });
    inputs[0]?.push({ kind: "barrier", checkpointId: 1 });
    inputs[0]?.push({ kind: "batch", batch: batchOf(["a1"]) });
    inputs[1]?.push({ kind: "batch", batch: batchOf(["b0"]) });
    const before: unknown[] = [];
    for (let i = 0; i < 500 && before.length < 2; i++) {
      await tick();
      before.push(...seen());
    }
    await tick();
    before.push(...seen());
    // a1 came after barrier 1 on input 0: it waits until input 1 delivers the barrier too.
    expect(before).toEqual([["a0"], ["b0"]]);
    expect(acks).toEqual([]);

    inputs[1]?.push({ kind: "barrier", checkpointId: 1 });
    // The snapshot is a file write: on a loaded machine it takes more than a tick, so wait for what must come.
    const after: unknown[] = [];
    for (let i = 0; i < 500 && (after.length < 2 || acks.length === 0); i++) {
      await tick();
      after.push(...seen());
    }
    expect(after).toEqual(["barrier", ["a1"]]);
    expect(acks.map((a) => a.id)).toEqual([1]);
    const restored = await storage.loadLatest();
    expect(restored).toBeUndefined(); // acknowledged, not yet complete: only the coordinator completes it
    // The snapshot counts a0 and b0 (before the barrier on both inputs), not a1.
    expect(await snapshot()).toEqual([["k", 2]]);

    inputs[0]?.push({ kind: "end" });
    inputs[1]?.push({ kind: "end" });
    await running;
    expect(seen()).toEqual(["end"]);
  });

  it("at-least-once checkpointing reads on past barrier n, and n's snapshot holds records after it", async () => {
    const { inputs, acks, running, seen, snapshot } = await twoInputOperator("at-least-once");
    inputs[0]?.push({ kind: "batch", batch: batchOf(["a0"]) });
    inputs[0]?.push({ kind: "barrier", checkpointId: 1 });
    inputs[0]?.push({ kind: "batch", batch: batchOf(["a1"]) });
    inputs[1]?.push({ kind: "batch", batch: batchOf(["b0"]) });
    const before: unknown[] = [];
    for (let i = 0; i < 500 && before.length < 3; i++) {
      await tick();
      before.push(...seen());
    }
    // a1 came after barrier 1 on input 0 and is not held back; no snapshot until input 1's barrier.
    expect(before.map(String).sort()).toEqual(["a0", "a1", "b0"]);
    expect(acks).toEqual([]);

    inputs[1]?.push({ kind: "barrier", checkpointId: 1 });
    const after: unknown[] = [];
    for (let i = 0; i < 500 && (after.length < 1 || acks.length === 0); i++) {
      await tick();
      after.push(...seen());
    }
    expect(after).toEqual(["barrier"]);
    expect(acks.map((a) => a.id)).toEqual([1]);
    // a1 is in checkpoint 1's state though its source position is after it: a restore replays it.
    expect(await snapshot()).toEqual([["k", 3]]);

    inputs[0]?.push({ kind: "end" });
    inputs[1]?.push({ kind: "end" });
    await running;
    expect(seen()).toEqual(["end"]);
  });
});
