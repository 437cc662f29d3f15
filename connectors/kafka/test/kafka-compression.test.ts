// Compressed record batches against the real broker. The sink's `compression` (gzip, snappy,
// lz4, zstd): a job writes every id once through it, read back by a read_committed reader. And
// what the Java producer writes (Kafka's own ConsoleProducer, the broker's version, with
// `compression.type` set to each codec) is read by the source, every line once and in order.

import { spawn } from "node:child_process";
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { idCounts, uniqueName } from "@exactly/testkit/ids";
import { kafkaTools } from "@exactly/testkit/kafka/tools";
import { Admin } from "@platformatic/kafka";
import { describe, expect, it } from "vitest";
import type { KafkaCompression } from "../src/index.ts";
import {
  createTopic,
  exactlyOnceReport,
  newKafka,
  partitionEnds,
  readCommitted,
  readWithSource,
  writeIds,
} from "./helpers.ts";

const CODECS = ["gzip", "snappy", "lz4", "zstd"] as const satisfies readonly KafkaCompression[];
const RECORDS = 4000;
const LINES = 3000;

/** The ids, padded to make them worth compressing, through a sink with `compression`. */
const writeCompressed = (topic: string, compression: KafkaCompression) =>
  writeIds(
    topic,
    RECORDS,
    {
      compression,
      serializer: (r: { id: number }) => ({
        key: String(r.id),
        value: JSON.stringify({ ...r, pad: "abc".repeat(20) }),
      }),
    },
    { parallelism: 1, splits: 1 },
  );

/** The bytes `topic`'s partitions take in the broker's log (DescribeLogDirs). */
async function topicBytes(topic: string, partitions: number): Promise<number> {
  const admin = new Admin({ clientId: "exactly-compression-test", bootstrapBrokers: kafkaBrokers() });
  try {
    const described = await admin.describeLogDirs({
      topics: [{ name: topic, partitions: Array.from({ length: partitions }, (_, i) => i) }],
    });
    let bytes = 0;
    for (const broker of described)
      for (const dir of broker.results)
        for (const t of dir.topics) for (const p of t.partitions) bytes += Number(p.partitionSize);
    return bytes;
  } finally {
    await admin.close();
  }
}

/** The same job's topic without compression, written once for every codec's comparison. */
let plainTopic: Promise<string> | undefined;
function plainBytes(): Promise<number> {
  plainTopic ??= (async () => {
    const topic = uniqueName("compressed-none");
    await createTopic(newKafka(kafkaBrokers()), topic, 2);
    await writeCompressed(topic, "none");
    return topic;
  })();
  return plainTopic.then((topic) => topicBytes(topic, 2));
}

/** Kafka's ConsoleProducer writes `lines` to `topic`, one record each, its batches compressed with `codec`. */
async function javaProduce(topic: string, codec: string, lines: readonly string[]): Promise<void> {
  const tools = await kafkaTools();
  const child = spawn(
    tools.java,
    [
      "-Xmx256m",
      "-cp",
      tools.classpath,
      "org.apache.kafka.tools.ConsoleProducer",
      "--bootstrap-server",
      kafkaBrokers().join(","),
      "--topic",
      topic,
      "--producer-property",
      `compression.type=${codec}`,
      "--producer-property",
      "linger.ms=20",
      "--producer-property",
      "acks=all",
    ],
    { stdio: ["pipe", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  child.stdin.end(`${lines.join("\n")}\n`);
  const code = await exited;
  if (code !== 0) throw new Error(`ConsoleProducer (${codec}) exited with ${code}: ${stderr}`);
}

describe("compressed record batches", () => {
  it.each(CODECS)(
    "the sink with compression %s writes every record once, in batches smaller than plain ones",
    async (codec) => {
      const topic = uniqueName(`compressed-${codec}`);
      await createTopic(newKafka(kafkaBrokers()), topic, 2);
      await writeCompressed(topic, codec);
      expect(exactlyOnceReport(idCounts(await readCommitted(topic, 2)), RECORDS)).toEqual({
        lost: [],
        duplicated: [],
        phantom: [],
      });
      for (const end of await partitionEnds(topic, 2)) expect(end.lastStableOffset).toBe(end.highWatermark);
      // The broker keeps batches as the producer compressed them: the log shows the codec worked.
      const [compressed, plain] = [await topicBytes(topic, 2), await plainBytes()];
      expect(compressed, `${codec}: ${compressed} bytes against ${plain} uncompressed`).toBeLessThan(plain * 0.6);
    },
  );

  it.each(CODECS)("the source reads what Kafka's Java producer wrote with compression.type=%s", async (codec) => {
    const topic = uniqueName(`java-${codec}`);
    await createTopic(newKafka(kafkaBrokers()), topic, 1);
    const lines = Array.from({ length: LINES }, (_, i) => JSON.stringify({ id: i, codec, pad: "xyz".repeat(i % 40) }));
    await javaProduce(topic, codec, lines);
    expect(await readWithSource(topic)).toEqual(lines);
  });
});
