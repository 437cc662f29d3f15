/**
 * Runs the window-sum example end to end against a real broker: fills the input topic,
 * runs the job in a child process that is killed with SIGKILL at seeded random points of
 * the sink lifecycle and restarted, then checks the committed output against a batch
 * computation, with our reader and with kcat (librdkafka, read_committed).
 *
 *   EXACTLY_KAFKA_BROKERS=127.0.0.1:59092 pnpm --filter @exactly/example-kafka-window-sum start [--events N] [--kills K] [--seed S]
 */
import { spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { seededRandom } from "@exactly/core";
import kafkajs from "kafkajs";
import { readCommittedValues } from "./read-committed.ts";
import { event, expectedSums, type WindowSum, type WindowSumConfig } from "./window-sum.ts";

export interface ExampleResult {
  readonly windows: number;
  readonly kills: number;
  /** Differences between the committed output and the batch computation (empty: exactly once). */
  readonly mismatches: string[];
  /** The same check on what kcat read, or why kcat could not be asked. */
  readonly kcatMismatches: string[] | string;
}

const POINTS = ["mid-write", "after-pre-commit", "after-checkpoint-durable"] as const;

function compare(expected: Map<string, number>, lines: readonly string[]): string[] {
  const actual = new Map<string, number>();
  const problems: string[] = [];
  for (const line of lines) {
    const w = JSON.parse(line) as WindowSum;
    const slot = `${w.key}@${w.start}`;
    if (actual.has(slot)) problems.push(`window ${slot} emitted twice`);
    actual.set(slot, w.sum);
  }
  for (const [slot, sum] of expected) {
    if (!actual.has(slot)) problems.push(`window ${slot} missing`);
    else if (actual.get(slot) !== sum) problems.push(`window ${slot}: ${actual.get(slot)} instead of ${sum}`);
  }
  for (const slot of actual.keys()) if (!expected.has(slot)) problems.push(`window ${slot} never existed`);
  return problems;
}

/** Reads the output topic as a read_committed reader that is not kafkajs: kcat. */
function readWithKcat(brokers: string[], topic: string): string[] | string {
  const result = spawnSync(
    "kcat",
    [
      "-b",
      brokers.join(","),
      "-C",
      "-t",
      topic,
      "-e",
      "-q",
      "-o",
      "beginning",
      "-X",
      "isolation.level=read_committed",
      "-f",
      "%s\\n",
    ],
    { encoding: "utf8", timeout: 60_000 },
  );
  if (result.error) return `kcat could not run: ${result.error.message} (apt-get install kcat)`;
  if (result.status !== 0) return `kcat exited with ${result.status}: ${result.stderr}`;
  return result.stdout.split("\n").filter((l) => l.length > 0);
}

export async function runWindowSumExample(options: {
  brokers: string[];
  events: number;
  kills: number;
  seed: number;
}): Promise<ExampleResult> {
  const kafka = new kafkajs.Kafka({
    clientId: "window-sum-example",
    brokers: options.brokers,
    logLevel: kafkajs.logLevel.NOTHING,
  });
  const run = randomUUID().slice(0, 8);
  const config: WindowSumConfig = {
    brokers: options.brokers,
    input: `window-sum-in-${run}`,
    output: `window-sum-out-${run}`,
    checkpoints: await mkdtemp(join(tmpdir(), "exactly-window-sum-")),
  };
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    topics: [
      { topic: config.input, numPartitions: 1 },
      { topic: config.output, numPartitions: 3 },
    ],
    waitForLeaders: true,
  });
  await admin.disconnect();
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  for (let start = 0; start < options.events; start += 5000) {
    const messages = [];
    for (let id = start; id < Math.min(options.events, start + 5000); id++)
      messages.push({ value: JSON.stringify(event(id)) });
    await producer.send({ topic: config.input, acks: -1, messages });
  }
  await producer.disconnect();

  const random = seededRandom(options.seed);
  const worker = fileURLToPath(new URL("./job-worker.ts", import.meta.url));
  let kills = 0;
  for (;;) {
    // The first occurrence: every run that still has output to write reaches it.
    const fault = kills < options.kills ? `${POINTS[Math.floor(random() * POINTS.length)]}@1` : "";
    const { code, signal } = await new Promise<{ code: number | null; signal: string | null }>((resolve) => {
      const child = spawn(
        process.execPath,
        ["--conditions=@exactly/source", "--disable-warning=ExperimentalWarning", worker],
        {
          env: { ...process.env, WINDOW_SUM_CONFIG: JSON.stringify(config), EXACTLY_FAULT: fault },
          stdio: ["ignore", "inherit", "inherit"],
        },
      );
      child.on("exit", (c, s) => resolve({ code: c, signal: s }));
    });
    if (process.env.WINDOW_SUM_DEBUG) console.error(`run with fault ${fault || "none"}: code ${code} signal ${signal}`);
    if (signal === "SIGKILL") {
      kills++;
      continue;
    }
    if (code === 0) break; // finished (if before its fault point, with fewer kills than asked)
    throw new Error(`window-sum job failed with exit code ${code}`);
  }

  const expected = expectedSums(options.events);
  const mismatches = compare(expected, await readCommittedValues(kafka, config.output, 3));
  const kcat = readWithKcat(options.brokers, config.output);
  return {
    windows: expected.size,
    kills,
    mismatches,
    kcatMismatches: typeof kcat === "string" ? kcat : compare(expected, kcat),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      events: { type: "string", default: "100000" },
      kills: { type: "string", default: "3" },
      seed: { type: "string", default: String(Date.now() % 100_000) },
    },
  });
  const brokers = (process.env.EXACTLY_KAFKA_BROKERS ?? "").split(",").filter(Boolean);
  if (brokers.length === 0)
    throw new Error('set EXACTLY_KAFKA_BROKERS (pnpm services up kafka; eval "$(pnpm -s services env)")');
  const result = await runWindowSumExample({
    brokers,
    events: Number(values.events),
    kills: Number(values.kills),
    seed: Number(values.seed),
  });
  console.log(JSON.stringify(result, null, 2));
  if (result.mismatches.length > 0 || typeof result.kcatMismatches === "string" || result.kcatMismatches.length > 0) {
    process.exitCode = 1;
  }
}
