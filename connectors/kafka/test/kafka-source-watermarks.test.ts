// KafkaSource event time against the real broker: the watermark is kept per partition, so an
// empty partition holds event time back (no window fires) until it has a record, or until it
// has been idle for the strategy's idleTimeoutMs.

import { type JobEvents, StreamJob, silentLogger, TumblingEventTimeWindows } from "@exactly/core";
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import { describe, expect, it } from "vitest";
import { MemorySink, MemoryStore, tempDir } from "../../../packages/core/test/helpers.ts";
import { KafkaSource } from "../src/index.ts";
import { createTopic, newKafka } from "./helpers.ts";

interface Reading {
  readonly ts: number;
}

/** Polls `condition` every 50 ms; fails after `limitMs` with `what`. */
async function until(what: string, condition: () => boolean, limitMs = 60_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function startWindowJob(input: string, idleTimeoutMs: number | undefined) {
  const store = new MemoryStore();
  let read = 0;
  let checkpoints = 0;
  const job = new StreamJob({
    name: "kafka-watermarks",
    parallelism: 1,
    checkpoint: { storage: await tempDir(), intervalMs: 50 },
    logger: silentLogger,
  });
  job
    .fromSource(
      new KafkaSource<Reading>({
        brokers: kafkaBrokers(),
        topics: [input],
        deserializer: (record) => JSON.parse(String(record.value)) as Reading,
      }),
      {
        watermarks: {
          timestampOf: (r) => r.ts,
          maxOutOfOrdernessMs: 0,
          ...(idleTimeoutMs === undefined ? {} : { idleTimeoutMs }),
        },
      },
    )
    .map((r) => {
      read++;
      return r;
    })
    .keyBy(() => "all")
    .window(TumblingEventTimeWindows.of(1000))
    .aggregate({ createAccumulator: () => 0, add: (_r, n) => n + 1, getResult: (n) => n })
    .sinkTo(() => new MemorySink(store), { name: "windows" });
  const events: JobEvents = {
    onComplete: () => {
      checkpoints++;
    },
  };
  const client = job.start(events);
  const windows = () => (store.committed as Array<{ start: number; value: number }>).map((w) => [w.start, w.value]);
  return { client, windows, read: () => read, checkpoints: () => checkpoints };
}

/** Two partitions: 50 readings 100 ms apart (event time 0 … 4.9 s) on partition 0, none on 1. */
async function inputWithAnEmptyPartition(): Promise<{
  input: string;
  sendToPartition1: (ts: number) => Promise<void>;
  close: () => Promise<void>;
}> {
  const kafka = newKafka(kafkaBrokers());
  const input = uniqueName("watermarks-in");
  await createTopic(kafka, input, 2);
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({
    topic: input,
    acks: -1,
    messages: Array.from({ length: 50 }, (_, i) => ({ partition: 0, value: JSON.stringify({ ts: i * 100 }) })),
  });
  const sendToPartition1 = async (ts: number) => {
    await producer.send({ topic: input, acks: -1, messages: [{ partition: 1, value: JSON.stringify({ ts }) }] });
  };
  return { input, sendToPartition1, close: () => producer.disconnect() };
}

// Windows [0, 1 s) … [3 s, 4 s) have 10 readings each; [4 s, 5 s) waits for a watermark ≥ 4999.
const FIRST_FOUR = [
  [0, 10],
  [1000, 10],
  [2000, 10],
  [3000, 10],
];

type WindowJob = Awaited<ReturnType<typeof startWindowJob>>;

/** Runs `body` against a window job over a fresh input, and always ends the job and the producer. */
async function withWindowJob(
  idleTimeoutMs: number | undefined,
  body: (job: WindowJob, sendToPartition1: (ts: number) => Promise<void>) => Promise<void>,
): Promise<void> {
  const { input, sendToPartition1, close } = await inputWithAnEmptyPartition();
  const job = await startWindowJob(input, idleTimeoutMs);
  try {
    await body(job, sendToPartition1);
  } finally {
    job.client.cancel(); // a no-op after stop; ends the job if a wait in `body` failed
    await job.client.result.catch(() => {});
    await close();
  }
}

describe("KafkaSource watermarks", () => {
  it("an empty partition holds event time back until it has a record", async () => {
    await withWindowJob(undefined, async (job, sendToPartition1) => {
      await until("partition 0 is read", () => job.read() === 50);
      // Two more checkpoints: any window that had fired would be committed by now.
      const seen = job.checkpoints();
      await until("two more checkpoints complete", () => job.checkpoints() >= seen + 2);
      expect(job.windows()).toEqual([]);

      await sendToPartition1(10_000); // partition 1's watermark jumps ahead; partition 0's (4899) now leads
      await until("windows fire", () => job.windows().length >= 4);
      await job.client.stop();
      expect(job.windows()).toEqual(FIRST_FOUR);
    });
  });

  it("an idle partition stops holding it back after idleTimeoutMs", async () => {
    await withWindowJob(300, async (job) => {
      await until("windows fire with partition 1 idle", () => job.windows().length >= 4);
      await job.client.stop();
      expect(job.windows()).toEqual(FIRST_FOUR);
    });
  });
});
