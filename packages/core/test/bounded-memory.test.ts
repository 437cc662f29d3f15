import { describe, expect, it } from "vitest";
import { GeneratorSource, StreamJob, silentLogger } from "../src/index.ts";
import { MemorySink, MemoryStore, type MemoryTxn, tempDir } from "./helpers.ts";

describe("bounded channels", () => {
  it("I6: a sink that stops taking records stops the source: what is in flight is bounded by the channels, not by the stream", async () => {
    const store = new MemoryStore();
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    class StalledSink extends MemorySink<number> {
      protected override async writeRecord(txn: MemoryTxn, record: number): Promise<void> {
        await released;
        super.writeRecord(txn, record);
      }
    }
    const batchSize = 100;
    const channelCapacity = 4;
    const job = new StreamJob({
      name: "bounded",
      checkpoint: { storage: await tempDir(), intervalMs: 60_000 },
      batchSize,
      channelCapacity,
      logger: silentLogger,
    });
    // An unbounded, unpaced source: without backpressure it would read millions of records here.
    job
      .fromSource(new GeneratorSource({ generate: (i) => i }))
      .sinkTo(() => new StalledSink(store), { name: "stalled" });
    const client = job.start();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const read = client.execution?.recordsRead ?? 0;
    release();
    client.cancel();
    await client.result.catch(() => {});
    // One batch in the sink, `channelCapacity` in the channel, one the source is handing over.
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThanOrEqual((channelCapacity + 2) * batchSize);
  });
});
