import { describe, expect, it } from "vitest";
import { GeneratorSource, StreamJob, silentLogger, TumblingEventTimeWindows } from "../src/index.ts";
import type { Batch } from "../src/records.ts";
import { SplitWatermarks } from "../src/runtime/engine/split-watermarks.ts";
import { MemorySink, MemoryStore, tempDir } from "./helpers.ts";

function batchOf(split: string, timestamps: number[]): Batch<number> {
  return {
    values: timestamps,
    positions: timestamps.map((ts) => ({ source: "s", split, offset: ts })),
    timestamps: undefined,
  };
}

describe("per-split watermarks", () => {
  it("emit the minimum over the reader's splits, so a lagging split holds event time back", () => {
    const active = ["a", "b"];
    const tracker = new SplitWatermarks({ timestampOf: (v) => v as number, maxOutOfOrdernessMs: 10 }, () => active);
    tracker.assign(batchOf("a", [1000, 2000]));
    expect(tracker.advance()).toBeUndefined(); // split b has delivered nothing yet
    tracker.assign(batchOf("b", [500]));
    expect(tracker.advance()).toBe(489);
    tracker.assign(batchOf("b", [3000]));
    expect(tracker.advance()).toBe(1989);
    active.splice(0, 1); // split a is exhausted: it no longer holds anything back
    expect(tracker.advance()).toBe(2989);
  });

  it("leave idle splits out after idleTimeoutMs, and never move the watermark back", () => {
    let now = 0;
    const tracker = new SplitWatermarks(
      { timestampOf: (v) => v as number, maxOutOfOrdernessMs: 0, idleTimeoutMs: 100 },
      () => ["a", "b", "c"],
      () => now,
    );
    tracker.assign(batchOf("a", [5000]));
    tracker.assign(batchOf("b", [3000]));
    expect(tracker.advance()).toBeUndefined(); // c has delivered nothing and is not idle yet
    now = 120;
    tracker.assign(batchOf("a", [6000])); // a active; b and c idle
    expect(tracker.advance()).toBe(5999);
    now = 300; // every split idle: the ones that had records decide (a 5999, b 2999): no step back
    expect(tracker.advance()).toBeUndefined();
    tracker.assign(batchOf("c", [10])); // c wakes up far behind: the watermark stays
    expect(tracker.advance()).toBeUndefined();
  });

  it("when every split turned idle, move event time to the least of the splits that had records", () => {
    let now = 0;
    const tracker = new SplitWatermarks(
      { timestampOf: (v) => v as number, maxOutOfOrdernessMs: 0, idleTimeoutMs: 100 },
      () => ["a", "b"],
      () => now,
    );
    tracker.assign(batchOf("a", [4900])); // b never has a record; a's last comes before b turns idle
    expect(tracker.advance()).toBeUndefined();
    now = 150;
    expect(tracker.advance()).toBe(4899);
  });

  it("without split ids, treat the reader as one split", () => {
    const tracker = new SplitWatermarks({ timestampOf: (v) => v as number, maxOutOfOrdernessMs: 0 }, undefined);
    const assigned = tracker.assign(batchOf("a", [7, 3]));
    expect(assigned.timestamps).toEqual([7, 3]);
    expect(tracker.advance()).toBe(6);
  });

  it("let a job window generator lanes read one after another without dropping records as late", async () => {
    // Four lanes, one reader: the reader hands out a whole batch of one lane before the next, so
    // with one watermark for the reader every lane after the first would arrive behind it.
    const store = new MemoryStore();
    const job = new StreamJob({
      name: "split-watermarks",
      parallelism: 1,
      checkpoint: { storage: await tempDir(), intervalMs: 50 },
      logger: silentLogger,
      batchSize: 500,
    });
    const count = 20_000;
    job
      .fromSource(new GeneratorSource({ count, splits: 4, generate: (i) => i }), {
        watermarks: { timestampOf: (i) => i, maxOutOfOrdernessMs: 0 },
      })
      .keyBy(() => "all")
      .window(TumblingEventTimeWindows.of(1000))
      .aggregate({ createAccumulator: () => 0, add: (_v, n) => n + 1, getResult: (n) => n })
      .sinkTo(() => new MemorySink(store), { name: "windows" });
    await job.execute();
    const counts = (store.committed as Array<{ start: number; value: number }>)
      .sort((a, b) => a.start - b.start)
      .map((w) => w.value);
    expect(counts).toEqual(Array.from({ length: count / 1000 }, () => 1000));
  });
});
