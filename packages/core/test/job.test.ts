import { describe, expect, it } from "vitest";
import { GeneratorSource, StreamJob, silentLogger } from "../src/index.ts";
import { MemorySink, MemoryStore, tempDir } from "./helpers.ts";

describe("StreamJob", () => {
  it("I3: runs generator → map → keyed process → two-phase sink and commits every record once", async () => {
    const store = new MemoryStore();
    const job = new StreamJob({
      name: "t",
      parallelism: 2,
      checkpoint: { storage: await tempDir(), intervalMs: 20 },
      logger: silentLogger,
    });
    job
      .fromSource(new GeneratorSource({ count: 20_000, generate: (i) => ({ id: i, key: i % 7 }) }))
      .map((r) => ({ ...r, doubled: r.id * 2 }))
      .keyBy((r) => r.key)
      .process<{ id: number; seen: number }, number>({
        processElement(value, ctx) {
          const seen = (ctx.state.value() ?? 0) + 1;
          ctx.state.update(seen);
          ctx.emit({ id: value.id, seen });
        },
      })
      .sinkTo(() => new MemorySink(store), { name: "mem" });
    const result = await job.execute();
    const ids = store.committed.map((r) => (r as { id: number }).id).sort((a, b) => a - b);
    expect(ids).toEqual(Array.from({ length: 20_000 }, (_, i) => i));
    expect(result.checkpointsCompleted).toBeGreaterThan(0);
    expect(store.open.size).toBe(0);
    expect(store.prepared.size).toBe(0);
  });
});

describe("GeneratorSource", () => {
  it("refuses a rate of 0 or less, which would allow no record and wait for ever", () => {
    for (const ratePerSecond of [0, -1, Number.NaN]) {
      expect(() => new GeneratorSource({ count: 10, ratePerSecond, generate: (i) => i })).toThrow(
        "ratePerSecond: must be more than 0",
      );
    }
  });
});
