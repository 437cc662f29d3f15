/**
 * The Kafka connector's benchmark cases, one per child process:
 *   node test/bench/cases/kafka-cases.ts <case> <records> <dir>
 * Every case reads the same pre-filled input topic (BENCH_KAFKA_INPUT) and writes a topic of
 * its own, except `raw`, the baseline, which writes the same records with a bare producer.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { DeliveryGuarantee, loadJob, silentLogger } from "@exactly/core";
import { ProduceAcks, Producer } from "@platformatic/kafka";
import kafkajs from "kafkajs";
import {
  benchRecord,
  type CaseResult,
  executeAndReport,
  report,
  reportTogether,
  resuming,
  runCaseProcess,
  runId,
} from "../bench-protocol.ts";
import { deleteBenchTopics } from "../kafka-input.ts";
import { benchShard, type KafkaBenchParams } from "./kafka-job.ts";

const [name, recordsArg, dir] = process.argv.slice(2) as [string, string, string];
const records = Number(recordsArg);
const brokers = (process.env.EXACTLY_KAFKA_BROKERS ?? "").split(",");
const input = process.env.BENCH_KAFKA_INPUT as string;
// Shards of one case write one topic: the case that starts them names it.
const output = process.env.BENCH_KAFKA_OUTPUT ?? `bench-out-${name.replace(/[^a-z0-9]+/g, "-")}-${runId(dir)}`;
const kafka = new kafkajs.Kafka({ clientId: "exactly-bench", brokers, logLevel: kafkajs.logLevel.NOTHING });
const PARTITIONS = 4;

async function createOutput(): Promise<void> {
  if (resuming) return;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: output, numPartitions: PARTITIONS }], waitForLeaders: true });
  await admin.disconnect();
}

async function framework(
  guarantee: DeliveryGuarantee,
  intervalMs: number,
  parallelism = 2,
  workers = 1,
  recordsFrom: "from the input topic" | "generated" = "from the input topic",
): Promise<void> {
  await createOutput();
  const prefix = process.env.BENCH_KAFKA_TXN_PREFIX;
  const params: KafkaBenchParams = {
    name,
    brokers,
    input,
    output,
    dir,
    guarantee,
    intervalMs,
    parallelism,
    workers,
    ...(prefix ? { transactionalIdPrefix: prefix } : {}),
    ...(recordsFrom === "generated" ? { generated: records } : {}),
  };
  const shard = benchShard();
  const job = await loadJob(new URL("./kafka-job.ts", import.meta.url), {
    params: params as unknown as Record<string, unknown>,
    runtime: { logger: silentLogger },
    ...(shard ? { shard, lease: { durationMs: 10_000 } } : {}),
  });
  await executeAndReport(job, records);
}

/**
 * The job as two shard processes at once, each reading the input partitions of its subtask
 * into the one output topic: from the first one's records flowing to the last one's last
 * commit, CPU and peak RSS summed over both.
 */
async function twoShards(): Promise<void> {
  await createOutput();
  const shard = async (k: number) => {
    const spawnedAt = performance.now();
    const env = { ...process.env, BENCH_SHARD: `${k}/2`, BENCH_KAFKA_OUTPUT: output };
    const args = [
      ...process.execArgv,
      fileURLToPath(import.meta.url),
      "exactly-once (1 s), shard",
      String(records),
      `${dir}`,
    ];
    const result: CaseResult = await runCaseProcess(process.execPath, args, env, `shard ${k} of 2`);
    return { ...result, startedAt: spawnedAt + (result.startupMs ?? 0) };
  };
  await reportTogether(records, [shard(0), shard(1)]);
}

/**
 * The ceiling of the two shards on this machine: two independent P=1 processes, unsharded,
 * each reading its own half of the records (an input topic of two partitions each) with its
 * own checkpoints and transactional ids, into the one output topic as the shards do (so the
 * broker's share of the machine is the same). No lease, no checkpoint head, no fences.
 */
async function twoProcesses(): Promise<void> {
  await createOutput();
  const halves = (process.env.BENCH_KAFKA_INPUT_HALVES ?? "").split(",");
  const half = Math.ceil(records / 2);
  const process_ = async (k: number) => {
    const spawnedAt = performance.now();
    const env = {
      ...process.env,
      BENCH_KAFKA_INPUT: halves[k],
      BENCH_KAFKA_OUTPUT: output,
      BENCH_KAFKA_TXN_PREFIX: `${output}-process-${k}`,
    };
    const count = k === 0 ? half : records - half;
    const args = [
      ...process.execArgv,
      fileURLToPath(import.meta.url),
      "exactly-once (1 s), P=1",
      String(count),
      join(dir, `process-${k}`),
    ];
    const result: CaseResult = await runCaseProcess(process.execPath, args, env, `process ${k} of 2`);
    return { ...result, startedAt: spawnedAt + (result.startupMs ?? 0) };
  };
  await reportTogether(records, [process_(0), process_(1)]);
}

/**
 * The baseline: the same records written by the bare client the connector runs on
 * (@platformatic/kafka's idempotent producer, acks=all), in batches, two in flight.
 */
async function raw(): Promise<void> {
  await createOutput();
  const producer = new Producer({ clientId: "exactly-bench", bootstrapBrokers: brokers, idempotent: true });
  const started = performance.now();
  const batch = 5000;
  const inFlight: Promise<unknown>[] = [];
  for (let start = 0; start < records; start += batch) {
    const messages = [];
    for (let id = start; id < Math.min(records, start + batch); id++)
      messages.push({ topic: output, value: Buffer.from(JSON.stringify(benchRecord(id))) });
    inFlight.push(producer.send({ acks: ProduceAcks.ALL, messages }));
    if (inFlight.length >= 2) await inFlight.shift();
  }
  await Promise.all(inFlight);
  report({ records, seconds: (performance.now() - started) / 1000, checkpointMs: [] });
  await producer.close();
}

/**
 * What a user writes for exactly-once with kafkajs alone: consume with eachBatch, and for
 * every batch begin a transaction, send the batch, send the consumed offsets into the
 * transaction, and commit.
 */
async function naive(): Promise<void> {
  await createOutput();
  const group = `bench-naive-${randomUUID().slice(0, 8)}`;
  const producer = kafka.producer({ transactionalId: group, maxInFlightRequests: 1, idempotent: true });
  await producer.connect();
  const consumer = kafka.consumer({ groupId: group, readUncommitted: false });
  await consumer.connect();
  await consumer.subscribe({ topic: input, fromBeginning: true });
  const started = performance.now();
  let seen = 0;
  await new Promise<void>((resolve, reject) => {
    consumer
      .run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          const txn = await producer.transaction();
          try {
            await txn.send({ topic: output, messages: batch.messages.map((m) => ({ value: m.value })) });
            const last = batch.messages.at(-1);
            if (last) {
              await txn.sendOffsets({
                consumerGroupId: group,
                topics: [
                  {
                    topic: batch.topic,
                    partitions: [{ partition: batch.partition, offset: String(Number(last.offset) + 1) }],
                  },
                ],
              });
            }
            await txn.commit();
          } catch (error) {
            await txn.abort();
            throw error;
          }
          seen += batch.messages.length;
          if (seen >= records) resolve();
        },
      })
      .catch(reject);
  });
  report({ records, seconds: (performance.now() - started) / 1000, checkpointMs: [] });
  await consumer.disconnect();
  await producer.disconnect();
}

const cases: Record<string, () => Promise<void>> = {
  "exactly-once (1 s)": () => framework(DeliveryGuarantee.EXACTLY_ONCE, 1000),
  "exactly-once (100 ms)": () => framework(DeliveryGuarantee.EXACTLY_ONCE, 100),
  "at-least-once": () => framework(DeliveryGuarantee.AT_LEAST_ONCE, 1000),
  // The multicore issue's pair: the sink's path is CPU-bound, so a second thread should show.
  "exactly-once (1 s), P=1": () => framework(DeliveryGuarantee.EXACTLY_ONCE, 1000, 1, 1),
  "exactly-once (1 s), P=2, 2 workers": () => framework(DeliveryGuarantee.EXACTLY_ONCE, 1000, 2, 2),
  // The sink alone at P=1, on records generated in memory like raw's and ProducerPerformance's.
  "exactly-once (1 s), P=1, generated input": () => framework(DeliveryGuarantee.EXACTLY_ONCE, 1000, 1, 1, "generated"),
  // As shards (#39): one shard, and two shard processes side by side (BENCH_SHARD k/N each).
  "exactly-once (1 s), 1 shard, P=1": () => {
    process.env.BENCH_SHARD = "0/1";
    return framework(DeliveryGuarantee.EXACTLY_ONCE, 1000, 1, 1);
  },
  "exactly-once (1 s), 2 shards, P=1 each": twoShards,
  "2 processes, P=1 each": twoProcesses,
  "exactly-once (1 s), shard": () => framework(DeliveryGuarantee.EXACTLY_ONCE, 1000, 1, 1),
  raw,
  naive,
};
const run = cases[name];
if (!run) throw new Error(`unknown case ${name}; cases: ${Object.keys(cases).join(", ")}`);
await run();
// The output is measured: the process that named it deletes it (a shard's parent, for a shard;
// a SIGKILLed first run never gets here, its restart does).
if (!process.env.BENCH_KAFKA_OUTPUT) await deleteBenchTopics(brokers, [output]);
