// KafkaSink EXACTLY_ONCE under SIGKILL at named fault points in a child process, then a clean
// run: every id is visible exactly once to a read_committed consumer and no transaction of
// the sink is left open (LSO = HWM on every partition, I4).

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { kafkaBrokers } from "../../../test/services/endpoints.ts";
import {
  createTopic,
  exactlyOnceReport,
  idCounts,
  newKafka,
  partitionEnds,
  readCommitted,
  runFixture,
  uniqueName,
} from "./helpers.ts";

const job = fileURLToPath(new URL("./fixtures/crash-job.ts", import.meta.url));
const RECORDS = 20_000;
const PARTITIONS = 3;

const cases: Array<{ name: string; faults: string[] }> = [
  { name: "mid-write", faults: ["mid-write@7"] },
  { name: "after pre-commit", faults: ["after-pre-commit@3"] },
  {
    name: "after the checkpoint is durable, before commit (resume by producer id)",
    faults: ["after-checkpoint-durable@2"],
  },
  { name: "mid-commit", faults: ["mid-commit@3"] },
  { name: "during recovery commit", faults: ["after-checkpoint-durable@2", "during-recovery-commit@1"] },
  { name: "during lingering abort", faults: ["mid-write@9", "during-lingering-abort@2"] },
  { name: "twice in a row at different phases", faults: ["after-pre-commit@4", "mid-write@12"] },
];

describe("Kafka sink under SIGKILL", () => {
  it.each(cases)("recovers from a crash $name: each id once, no transaction left open", async ({ faults }) => {
    const kafka = newKafka(kafkaBrokers());
    const topic = uniqueName("sink-crash");
    await createTopic(kafka, topic, PARTITIONS);
    const env = {
      CRASH_BROKERS: kafkaBrokers().join(","),
      CRASH_TOPIC: topic,
      CRASH_PREFIX: uniqueName("crash"),
      CRASH_CHECKPOINTS: await mkdtemp(join(tmpdir(), "exactly-kafka-crash-")),
      CRASH_RECORDS: String(RECORDS),
    };
    for (const fault of faults) {
      const run = await runFixture(job, { ...env, EXACTLY_FAULT: fault });
      expect(run.signal, `run with ${fault} should die by SIGKILL; stderr: ${run.stderr}`).toBe("SIGKILL");
    }
    const last = await runFixture(job, env);
    expect(last.code, last.stderr).toBe(0);

    // Read first: it waits (bounded) for the markers of the last commit to land.
    const report = exactlyOnceReport(idCounts(await readCommitted(kafka, topic, PARTITIONS)), RECORDS);
    for (const end of await partitionEnds(kafka, topic, PARTITIONS)) {
      expect(end.lastStableOffset, `partition ${end.partition}: a transaction is still open`).toBe(end.highWatermark);
    }
    expect(report.lost.length, `lost ids, first: ${report.lost.slice(0, 5)}`).toBe(0);
    expect(report.duplicated.length, `duplicated ids, first: ${report.duplicated.slice(0, 5)}`).toBe(0);
    expect(report.phantom).toEqual([]);
  });
});
