// The broker is restarted in the middle of a run (a controlled shutdown, then a start), or
// SIGKILLed (no controlled shutdown) and left down for seconds at chosen
// moments of the sink's lifecycle: while the job writes, between pre-commit and commit,
// and while a restarted job recovers. The job holds still at that moment (a fault point
// armed with hold:<ms>) while the test kills the broker, then meets the outage and rides
// through it: its requests wait for the broker, or an attempt fails and the default restart
// strategy restarts it. Afterwards every record is committed once
// and no transaction is left open. And the window-sum example: 300,000 events with the
// broker SIGKILLed mid-run finishes by itself, every window once for both readers.
// Runs in the "services-restart" project, before the other tests and beside only tests that
// restart other servers: it ends every session on the broker.

import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { crashKafka, kafkaBrokers, restartKafka } from "@exactly/testkit/endpoints";
import { idCounts, uniqueName } from "@exactly/testkit/ids";
import { describe, expect, it } from "vitest";
import { runWindowSum } from "../../../examples/kafka-window-sum/src/run-window-sum.ts";
import { createTopic, exactlyOnceReport, newKafka, partitionEnds, readCommitted } from "./helpers.ts";

const job = fileURLToPath(new URL("./fixtures/crash-job.ts", import.meta.url));
const RECORDS = 30_000;
const PARTITIONS = 3;
/** The broker stays down this long after its SIGKILL, then starts on its logs again. */
const DOWN_MS = 5000;

interface JobRun {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves when the job reports that it holds at its armed fault point. */
  readonly holding: Promise<void>;
  stderr(): string;
}

function startJob(env: Record<string, string>): JobRun {
  const child = spawn(
    process.execPath,
    ["--conditions=@exactly/source", "--disable-warning=ExperimentalWarning", job],
    { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  let reportHolding: () => void = () => {};
  const holding = new Promise<void>((resolve) => {
    reportHolding = resolve;
  });
  child.stderr?.on("data", (chunk) => {
    stderr = (stderr + chunk).slice(-20_000);
    if (stderr.includes("exactly-fault: holding at")) reportHolding();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  return { child, exited, holding, stderr: () => stderr };
}

async function expectExactlyOnce(topic: string): Promise<void> {
  const report = exactlyOnceReport(idCounts(await readCommitted(topic, PARTITIONS)), RECORDS);
  expect(report.lost.length, `lost ids, first: ${report.lost.slice(0, 5)}`).toBe(0);
  expect(report.duplicated.length, `duplicated ids, first: ${report.duplicated.slice(0, 5)}`).toBe(0);
  expect(report.phantom).toEqual([]);
  for (const end of await partitionEnds(topic, PARTITIONS)) {
    expect(end.lastStableOffset, `partition ${end.partition}: a transaction is still open`).toBe(end.highWatermark);
  }
}

async function jobEnv(label: string) {
  const topic = uniqueName(`broker-crash-${label}`);
  await createTopic(newKafka(kafkaBrokers()), topic, PARTITIONS);
  return {
    topic,
    env: {
      CRASH_BROKERS: kafkaBrokers().join(","),
      CRASH_TOPIC: topic,
      CRASH_PREFIX: uniqueName(`crash-${label}`),
      CRASH_CHECKPOINTS: await mkdtemp(join(tmpdir(), "exactly-kafka-crash-")),
      CRASH_RECORDS: String(RECORDS),
      CRASH_RATE: "5000",
      CRASH_RESTARTS: "default",
      CRASH_VERBOSE: "1",
    },
  };
}

/** The job holds at `fault`; the broker is SIGKILLed there and stays down DOWN_MS; the job must finish by itself. */
async function crashBrokerAt(run: JobRun): Promise<void> {
  await run.holding;
  // The broker is down from its SIGKILL until at least DOWN_MS later. Not the time the restart
  // resolves: that includes the health probe, while which a job that reconnected can finish.
  const brokerBackAt = Date.now() + DOWN_MS;
  const crashed = crashKafka({ downMs: DOWN_MS });
  let exitedAt = 0;
  const [{ code }] = await Promise.all([
    run.exited.then((exit) => {
      exitedAt = Date.now();
      return exit;
    }),
    crashed,
  ]);
  expect(code, run.stderr().slice(-4000)).toBe(0);
  // It met the outage: the hold ends while the broker is down, with most of the input still
  // to write, so the job can only end once the broker is back (whether an attempt failed and
  // restarted, or its requests waited out the outage).
  expect(exitedAt, "the job ended before the broker could be back: it never met the outage").toBeGreaterThan(
    brokerBackAt,
  );
}

describe("Kafka broker restarted or SIGKILLed mid-run", () => {
  it("a controlled restart: the job rides through and the output is exactly once", async () => {
    const { topic, env } = await jobEnv("restart");
    const run = startJob(env);
    // Some transactions are committed and some are in flight when the broker goes away.
    await new Promise((r) => setTimeout(r, 2000));
    await restartKafka();
    const { code } = await run.exited;
    expect(code, run.stderr().slice(-4000)).toBe(0);
    await expectExactlyOnce(topic);
  });

  it.each([
    ["while the job writes", "mid-write@40"],
    ["between pre-commit and commit", "after-pre-commit@12"],
    ["after the checkpoint is durable, before any commit", "after-checkpoint-durable@12"],
  ])("%s: the job rides through and the output is exactly once", async (_moment, fault) => {
    const { topic, env } = await jobEnv("run");
    const run = startJob({ ...env, EXACTLY_FAULT: fault, EXACTLY_FAULT_ACTION: "hold:4000" });
    await crashBrokerAt(run);
    await expectExactlyOnce(topic);
  });

  it("while a restarted job recovers its pre-committed transactions: recovery waits out the outage", async () => {
    for (let attempt = 1; ; attempt++) {
      const { topic, env } = await jobEnv("recovery");
      // The first process dies with transactions pre-committed and the checkpoint durable.
      const first = startJob({ ...env, EXACTLY_FAULT: "after-checkpoint-durable@12" });
      expect((await first.exited).signal).toBe("SIGKILL");
      // The next one holds after its first recommit; the broker dies there.
      const second = startJob({ ...env, EXACTLY_FAULT: "during-recovery-commit@1", EXACTLY_FAULT_ACTION: "hold:4000" });
      let timer: NodeJS.Timeout | undefined;
      const stuck = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`the restarted job neither held nor ended in 90 s: ${second.stderr().slice(-4000)}`)),
          90_000,
        );
      });
      const reached = await Promise.race([second.holding.then(() => true), second.exited.then(() => false), stuck]);
      clearTimeout(timer);
      if (!reached) {
        // It ended without recommitting anything: the checkpoint it restored held no
        // pre-committed transaction (a checkpoint of a subtask that had no records), so
        // this attempt tested nothing. A failed run is a failure, not a retry.
        const { code } = await second.exited;
        expect(code, second.stderr().slice(-4000)).toBe(0);
        expect(attempt, "no attempt restored a pre-committed transaction").toBeLessThan(3);
        continue;
      }
      await crashBrokerAt(second);
      await expectExactlyOnce(topic);
      return;
    }
  });

  it("exactly demo --kafka's job: 300,000 events with the broker SIGKILLed mid-run finishes by itself, every window once", async () => {
    const kafka = newKafka(kafkaBrokers());
    let output: string | undefined;
    const lines: string[] = [];
    const running = runWindowSum({
      brokers: kafkaBrokers(),
      events: 300_000,
      kills: 0,
      seed: 1,
      log: (line) => {
        lines.push(line);
        const input = /writing \d+ events to (window-sum-in-\S+)/.exec(line)?.[1];
        if (input) output = input.replace("window-sum-in-", "window-sum-out-");
      },
    });
    // Once the job has committed windows, the broker dies under it.
    const admin = kafka.admin();
    await admin.connect();
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (Date.now() > deadline) throw new Error(`no window committed in 120 s: ${lines.join("; ")}`);
      await new Promise((r) => setTimeout(r, 200));
      if (!output) continue;
      const offsets = await admin.fetchTopicOffsets(output).catch(() => []);
      if (offsets.some((o) => Number(o.high) > 0)) break;
    }
    await admin.disconnect();
    await crashKafka({ downMs: DOWN_MS });
    const result = await running;
    expect(result.windows).toBe(15_000);
    expect(result.mismatches).toEqual([]);
    expect(result.kcatStatus).toBe("checked");
    expect(result.kcatMismatches).toEqual([]);
  });
});
