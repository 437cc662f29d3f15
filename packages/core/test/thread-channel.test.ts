// The channel between subtasks on different threads: what a batch and the control events
// become on the port, in order; values moved rather than copied; and backpressure by credits.
import { MessageChannel } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import type { StreamElement } from "../src/records.ts";
import { jsonExchangeCodec, structuredExchangeCodec } from "../src/runtime/engine/exchange/exchange-codec.ts";
import { ThreadChannelReceiver, ThreadChannelSender, toWire } from "../src/runtime/engine/exchange/thread-channel.ts";

type Element = StreamElement<unknown>;
const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

/** Both halves over one MessageChannel: the same port semantics as between two threads. */
function pair(capacity: number, codec = jsonExchangeCodec) {
  const { port1, port2 } = new MessageChannel();
  const sender = new ThreadChannelSender(port1, codec, capacity);
  const receiver = new ThreadChannelReceiver(port2, codec, capacity);
  return {
    sender,
    receiver,
    close: () => {
      sender.close();
      receiver.close();
    },
  };
}

async function receive(receiver: ThreadChannelReceiver, count: number): Promise<Element[]> {
  const got: Element[] = [];
  for (let i = 0; i < 400 && got.length < count; i++) {
    for (let e = receiver.channel.poll(); e; e = receiver.channel.poll()) got.push(e);
    if (got.length < count) await tick();
  }
  return got;
}

describe("a channel between threads", () => {
  it("carries batches with their positions and timestamps, and the control events, in order", async () => {
    const { sender, receiver, close } = pair(8);
    const batch = {
      values: [
        { id: 1, name: "a", nested: { k: [1, 2] } },
        { id: 2, name: "b" },
        { id: 3, name: null },
      ],
      positions: [
        { source: "orders", split: "0", offset: 10 },
        { source: "orders", split: "0", offset: 11 },
        { source: "orders", split: "p-1", offset: 7 },
      ],
      timestamps: [1000, 1001, 999],
    };
    sender.push({ kind: "batch", batch });
    sender.push({ kind: "barrier", checkpointId: 4 });
    sender.push({ kind: "watermark", timestamp: 998 });
    sender.push({
      kind: "batch",
      batch: { values: ["x"], positions: [{ source: "f", split: "a.txt", offset: "line-9" }], timestamps: undefined },
    });
    sender.push({ kind: "end" });
    expect(await receive(receiver, 5)).toEqual([
      { kind: "batch", batch },
      { kind: "barrier", checkpointId: 4 },
      { kind: "watermark", timestamp: 998 },
      {
        kind: "batch",
        batch: { values: ["x"], positions: [{ source: "f", split: "a.txt", offset: "line-9" }], timestamps: undefined },
      },
      { kind: "end" },
    ]);
    close();
  });

  it("moves a batch's buffers to the other side instead of copying them", () => {
    const { port1, port2 } = new MessageChannel();
    const { message, transfer } = toWire(
      {
        kind: "batch",
        batch: { values: [{ id: 1 }], positions: [{ source: "s", split: "0", offset: 0 }], timestamps: [5] },
      },
      jsonExchangeCodec,
    );
    expect(transfer).toHaveLength(3); // values, offsets, timestamps
    port1.postMessage(message, transfer);
    // Transferred: the sending side's buffers are detached.
    expect(transfer.map((buffer) => buffer.byteLength)).toEqual([0, 0, 0]);
    port1.close();
    port2.close();
  });

  it("makes the producer wait once `capacity` elements are under way, until the consumer takes one", async () => {
    const { sender, receiver, close } = pair(2);
    const element: Element = { kind: "barrier", checkpointId: 1 };
    expect(sender.push(element)).toBeUndefined();
    let released = false;
    const wait = sender.push(element)?.then(() => {
      released = true;
    });
    expect(wait).toBeInstanceOf(Promise);
    await tick();
    await tick();
    expect(released).toBe(false); // two under way, none taken
    expect(receiver.channel.size).toBe(2);
    receiver.channel.poll();
    await wait;
    expect(released).toBe(true);
    close();
  });

  it("rejects a waiting producer when the channel is cancelled", async () => {
    const { sender, close } = pair(1);
    const waiting = sender.push({ kind: "end" });
    sender.cancel(new Error("torn down"));
    await expect(waiting).rejects.toThrow("torn down");
    expect(() => sender.push({ kind: "end" })).toThrow("torn down");
    close();
  });

  it("keeps what JSON cannot with the structured codec: Dates, Maps, BigInts, undefined", async () => {
    const { sender, receiver, close } = pair(2, structuredExchangeCodec);
    const values = [{ at: new Date(5), tags: new Map([["a", 1]]), big: 10n, gone: undefined }];
    sender.push({
      kind: "batch",
      batch: { values, positions: [{ source: "s", split: "0", offset: 0 }], timestamps: undefined },
    });
    const [got] = await receive(receiver, 1);
    expect(got?.kind === "batch" ? got.batch.values : undefined).toEqual(values);
    close();
  });
});
