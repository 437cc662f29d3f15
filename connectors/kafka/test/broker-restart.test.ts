// The broker is restarted in the middle of a run: the job's sends and commits fail, it
// restarts itself from the latest checkpoint (restart strategy with backoff), and the
// output is still exactly once with no transaction left open. Runs in the
// "services-restart" project, before any other test uses the broker.

import { spawn } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { kafkaBrokers, restartKafka } from "../../../test/services/endpoints.ts";
import {
  createTopic,
  exactlyOnceReport,
  idCounts,
  newKafka,
  partitionEnds,
  readCommitted,
  uniqueName,
} from "./helpers.ts";

const job = fileURLToPath(new URL("./fixtures/crash-job.ts", import.meta.url));
const RECORDS = 30_000;
const PARTITIONS = 3;

describe("Kafka broker restarted mid-run", () => {
  it("the job recovers by itself and the output is exactly once", async () => {
    const kafka = newKafka(kafkaBrokers());
    const topic = uniqueName("broker-restart");
    await createTopic(kafka, topic, PARTITIONS);
    const child = spawn(
      process.execPath,
      ["--conditions=@exactly/source", "--disable-warning=ExperimentalWarning", job],
      {
        env: {
          ...process.env,
          CRASH_BROKERS: kafkaBrokers().join(","),
          CRASH_TOPIC: topic,
          CRASH_PREFIX: uniqueName("restart"),
          CRASH_CHECKPOINTS: await mkdtemp(join(tmpdir(), "exactly-kafka-restart-")),
          CRASH_RECORDS: String(RECORDS),
          CRASH_RATE: "5000",
          CRASH_RESTARTS: "20",
          CRASH_VERBOSE: "1",
        },
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise<{ code: number | null }>((resolve) => child.on("exit", (code) => resolve({ code })));

    // Some transactions are committed and some are in flight when the broker goes away.
    await new Promise((r) => setTimeout(r, 2000));
    await restartKafka();
    const { code } = await exited;
    expect(code, stderr.slice(-3000)).toBe(0);

    const report = exactlyOnceReport(idCounts(await readCommitted(kafka, topic, PARTITIONS)), RECORDS);
    expect(report.lost.length, `lost ids, first: ${report.lost.slice(0, 5)}`).toBe(0);
    expect(report.duplicated.length, `duplicated ids, first: ${report.duplicated.slice(0, 5)}`).toBe(0);
    expect(report.phantom).toEqual([]);
    for (const end of await partitionEnds(kafka, topic, PARTITIONS)) {
      expect(end.lastStableOffset, `partition ${end.partition}: a transaction is still open`).toBe(end.highWatermark);
    }
  });
});
