// A keyBy edge splits each batch by the subtask owning each record's key group; every record
// keeps its own position and timestamp, in the order the batch had them.
import { describe, expect, it } from "vitest";
import { noMetrics } from "../src/metrics.ts";
import { keyGroupOf, subtaskForKeyGroup } from "../src/operators/key-groups.ts";
import type { Batch, StreamElement } from "../src/records.ts";
import type { Edge } from "../src/runtime/api/job-graph.ts";
import type { OutputChannel } from "../src/runtime/engine/channel.ts";
import { TaskOutput } from "../src/runtime/engine/output.ts";

class Recorder implements OutputChannel {
  readonly batches: Batch<unknown>[] = [];
  push(element: unknown): undefined {
    const e = element as StreamElement<unknown>;
    if (e.kind === "batch") this.batches.push(e.batch);
    return undefined;
  }
  cancel(): void {}
}

describe("a keyBy edge", () => {
  it("sends each record, with its position and timestamp, to the subtask that owns its key", async () => {
    const parts = 3;
    const maxParallelism = 128;
    const channels = Array.from({ length: parts }, () => new Recorder());
    const edge = { chain: [], partitioning: { kind: "hash", keyOf: (v: { key: number }) => v.key } } as unknown as Edge;
    const output = new TaskOutput(
      [{ edge, channels }],
      { stage: "s", subtask: 0 },
      { stages: [], maxParallelism },
      noMetrics,
    );
    const ids = Array.from({ length: 500 }, (_, i) => i);
    const batch: Batch<{ id: number; key: number }> = {
      values: ids.map((id) => ({ id, key: (id * 7) % 61 })),
      positions: ids.map((id) => ({ source: "gen", split: String(id % 2), offset: id })),
      timestamps: ids.map((id) => 1000 + id),
    };
    await output.emitBatch(batch);

    const seen: number[] = [];
    channels.forEach((channel, target) => {
      for (const part of channel.batches) {
        part.values.forEach((value, i) => {
          const { id, key } = value as { id: number; key: number };
          expect(subtaskForKeyGroup(keyGroupOf(key, maxParallelism), maxParallelism, parts)).toBe(target);
          expect(part.positions[i]).toEqual({ source: "gen", split: String(id % 2), offset: id });
          expect(part.timestamps?.[i]).toBe(1000 + id);
          seen.push(id);
        });
        const partIds = part.values.map((v) => (v as { id: number }).id);
        expect(partIds).toEqual([...partIds].sort((a, b) => a - b));
      }
    });
    expect(seen.sort((a, b) => a - b)).toEqual(ids);
    // Every subtask got some of these 61 keys.
    expect(channels.map((c) => c.batches.length)).toEqual([1, 1, 1]);
  });
});
