/**
 * What a batch costs to cross between worker threads, by encoding (the multicore issue's
 * codec choice, docs/design.md §2, Worker threads). The main thread makes 1024-record
 * batches of the bench records and sends them; the consumer takes them on the same thread
 * through a local Channel, or on a worker thread through a thread channel (JSON or V8
 * serialize), or as the batch posted as it is (structured clone). Both ends count and sum
 * the ids, so a lost or doubled batch shows. One case per child process:
 *   node test/bench/cases/exchange-cases.ts <case> <records> <dir>
 */
import { performance } from "node:perf_hooks";
import { isMainThread, MessageChannel, parentPort, Worker, workerData } from "node:worker_threads";
import type { Batch, StreamElement } from "../../../packages/core/src/records.ts";
import { Channel } from "../../../packages/core/src/runtime/engine/channel.ts";
import {
  type ExchangeCodec,
  jsonExchangeCodec,
  structuredExchangeCodec,
} from "../../../packages/core/src/runtime/engine/exchange/exchange-codec.ts";
import {
  ThreadChannelReceiver,
  ThreadChannelSender,
} from "../../../packages/core/src/runtime/engine/exchange/thread-channel.ts";
import { benchRecord, report } from "../bench-protocol.ts";

type Element = StreamElement<unknown>;
type Record = ReturnType<typeof benchRecord>;
const BATCH = 1024;
const CAPACITY = 4;
const codecs: { [name: string]: ExchangeCodec<unknown> } = {
  json: jsonExchangeCodec,
  structured: structuredExchangeCodec,
};

function batchFrom(start: number, end: number): Batch<unknown> {
  const values: Record[] = [];
  const positions = [];
  for (let id = start; id < end; id++) {
    values.push(benchRecord(id));
    positions.push({ source: "bench", split: "0", offset: id });
  }
  return { values, positions, timestamps: undefined };
}

/** Takes elements until the end, counting records and summing ids. */
async function consume(channel: Channel<Element>): Promise<{ count: number; sum: number }> {
  let count = 0;
  let sum = 0;
  for (;;) {
    const element = channel.poll();
    if (element === undefined) {
      await new Promise<void>((resolve) => {
        channel.onData = () => {
          channel.onData = undefined;
          resolve();
        };
      });
      continue;
    }
    if (element.kind === "end") return { count, sum };
    if (element.kind !== "batch") continue;
    for (const value of element.batch.values) sum += (value as Record).id;
    count += element.batch.values.length;
  }
}

if (!isMainThread) {
  // The consuming worker: a thread channel's receiving half, or plain posted batches.
  const { port, codec, records } = workerData as {
    port: import("node:worker_threads").MessagePort;
    codec?: string;
    records: number;
  };
  let result: { count: number; sum: number };
  if (codec) {
    const receiver = new ThreadChannelReceiver(port, codecs[codec] as ExchangeCodec<unknown>, CAPACITY);
    result = await consume(receiver.channel);
  } else {
    // Posted as they are: acknowledged one by one for the same backpressure as the credits.
    result = await new Promise((resolve) => {
      let count = 0;
      let sum = 0;
      port.on("message", (batch: Batch<Record> | null) => {
        if (batch === null) return resolve({ count, sum });
        for (const value of batch.values) sum += value.id;
        count += batch.values.length;
        port.postMessage("credit");
      });
    });
  }
  port.close();
  parentPort?.postMessage({ ...result, records });
} else {
  const [name, recordsArg] = process.argv.slice(2) as [string, string];
  const records = Number(recordsArg);
  const expectedSum = (records * (records - 1)) / 2;
  const started = performance.now();
  let got: { count: number; sum: number };
  if (name === "same thread") {
    const channel = new Channel<Element>(CAPACITY);
    const consumer = consume(channel);
    for (let start = 0; start < records; start += BATCH) {
      const wait = channel.push({ kind: "batch", batch: batchFrom(start, Math.min(records, start + BATCH)) });
      if (wait) await wait;
    }
    await channel.push({ kind: "end" });
    got = await consumer;
  } else {
    const codec = name === "postMessage clone" ? undefined : name;
    if (codec !== undefined && !codecs[codec]) throw new Error(`unknown case ${name}`);
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(new URL(import.meta.url), {
      workerData: { port: port2, records, ...(codec ? { codec } : {}) },
      transferList: [port2],
    });
    const done = new Promise<{ count: number; sum: number }>((resolve) => worker.once("message", resolve));
    if (codec) {
      const sender = new ThreadChannelSender(port1, codecs[codec] as ExchangeCodec<unknown>, CAPACITY);
      for (let start = 0; start < records; start += BATCH) {
        const wait = sender.push({ kind: "batch", batch: batchFrom(start, Math.min(records, start + BATCH)) });
        if (wait) await wait;
      }
      await sender.push({ kind: "end" });
    } else {
      let credits = CAPACITY;
      let wake: (() => void) | undefined;
      port1.on("message", () => {
        credits++;
        wake?.();
      });
      for (let start = 0; start < records; start += BATCH) {
        port1.postMessage(batchFrom(start, Math.min(records, start + BATCH)));
        credits--;
        while (credits === 0) await new Promise<void>((resolve) => (wake = resolve));
      }
      port1.postMessage(null);
    }
    got = await done;
    port1.close();
    await worker.terminate();
  }
  if (got.count !== records || got.sum !== expectedSum) {
    throw new Error(
      `${name}: received ${got.count} records summing to ${got.sum}, sent ${records} summing to ${expectedSum}`,
    );
  }
  report({ records, seconds: (performance.now() - started) / 1000, checkpointMs: [] });
}
