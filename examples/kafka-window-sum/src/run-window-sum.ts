/**
 * Runs the window-sum example end to end against a real broker: fills the input topic, runs
 * the job in a child process that is killed with SIGKILL at seeded random points of the sink
 * lifecycle and restarted, then checks the committed output against a batch computation,
 * with our reader and with kcat (librdkafka, read_committed).
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { seededRandom, siblingScript } from "@exactly/core/testing";
import { Admin, ProduceAcks, Producer } from "@platformatic/kafka";
import { readCommittedValues, readCommittedWithKcat } from "./read-committed.ts";
import {
  event,
  expectedSums,
  INPUT_PARTITIONS,
  partitionOf,
  type WindowSum,
  type WindowSumConfig,
} from "./window-sum.ts";

export interface WindowSumRunOptions {
  readonly brokers: readonly string[];
  /** Input events; 100 events make one window of each of the five sensors. */
  readonly events: number;
  /** SIGKILLs asked for. A run that finishes before its fault point ends with fewer. */
  readonly kills: number;
  readonly seed: number;
  /** Told what happens, a line at a time. */
  readonly log?: (line: string) => void;
  /**
   * Ends the run when aborted (a Ctrl-C): the job's process is SIGKILLed, the checkpoints
   * removed, and the run rejects with {@link WindowSumStoppedError}.
   */
  readonly stop?: AbortSignal;
}

/** The run was stopped through `stop`; its message names the topics it leaves on the broker. */
export class WindowSumStoppedError extends Error {
  readonly input: string;
  readonly output: string;
  constructor(input: string, output: string) {
    super(`its checkpoints were removed; the topics ${input} and ${output} are left on the broker`);
    this.name = "WindowSumStoppedError";
    this.input = input;
    this.output = output;
  }
}

/** Thrown inside the run once `stop` is aborted; the run turns it into a WindowSumStoppedError. */
class Stopped extends Error {}

function throwIfStopped(stop: AbortSignal | undefined): void {
  if (stop?.aborted) throw new Stopped();
}

/**
 * Whether `stop` is aborted within `ms`: a Ctrl-C reaches the job's process with ours, and it
 * may end before our own handler has run.
 */
async function stoppedWithin(stop: AbortSignal | undefined, ms: number): Promise<boolean> {
  if (!stop || stop.aborted) return stop?.aborted === true;
  // Resolves after `ms`, or rejects at once when `stop` aborts (its timer cleared): either way, ask `stop` then.
  await sleep(ms, undefined, { signal: stop }).catch(() => {});
  return stop.aborted;
}

export interface WindowSumResult {
  readonly events: number;
  readonly windows: number;
  readonly kills: number;
  readonly elapsedSeconds: number;
  readonly input: string;
  readonly output: string;
  /** Differences between the committed output and the batch computation (empty: exactly once). */
  readonly mismatches: string[];
  /** The same check on what kcat read, or why kcat read nothing. */
  readonly kcatMismatches: string[] | string;
  /** Whether kcat's check ran: "not-installed" and "failed" are checks that did not run. */
  readonly kcatStatus: "checked" | "not-installed" | "failed";
}

/**
 * Where the job is killed: while writing, after pre-commit, and after the checkpoint is durable
 * but before commit; at one of the first occurrences in a run, so that a run rarely finishes
 * before its fault point, and kills land after some transactions committed or pre-committed.
 */
const FAULTS = [
  { point: "mid-write", occurrences: 3 },
  { point: "after-pre-commit", occurrences: 2 },
  { point: "after-checkpoint-durable", occurrences: 2 },
] as const;

function pickFault(random: () => number): string {
  const fault = FAULTS[Math.floor(random() * FAULTS.length)] as (typeof FAULTS)[number];
  return `${fault.point}@${1 + Math.floor(random() * fault.occurrences)}`;
}

/** Compares committed window sums (JSON lines) with the batch computation. */
export function compareWindows(expected: ReadonlyMap<string, number>, lines: readonly string[]): string[] {
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

/** Creates the run's topics and writes its input, with the client the Kafka connector runs on. */
async function fillInput(config: WindowSumConfig, events: number, stop: AbortSignal | undefined): Promise<void> {
  const clientId = "window-sum-example";
  const admin = new Admin({ clientId, bootstrapBrokers: config.brokers });
  try {
    await admin.createTopics({
      topics: [
        { topic: config.input, partitions: INPUT_PARTITIONS, replicas: 1 },
        { topic: config.output, partitions: 3, replicas: 1 },
      ],
    });
  } finally {
    await admin.close();
  }
  // The client retries a send whose partition has no leader yet (a topic just created).
  const producer = new Producer({ clientId, bootstrapBrokers: config.brokers, idempotent: true, retries: 20 });
  try {
    for (let start = 0; start < events; start += 5000) {
      throwIfStopped(stop);
      const messages = [];
      for (let id = start; id < Math.min(events, start + 5000); id++)
        messages.push({
          topic: config.input,
          partition: partitionOf(id),
          value: Buffer.from(JSON.stringify(event(id))),
        });
      await producer.send({ acks: ProduceAcks.ALL, messages });
    }
  } finally {
    await producer.close();
  }
}

/** Runs the job until it finishes, killing it `kills` times on the way; returns the kills that landed. */
async function runWithKills(config: WindowSumConfig, options: WindowSumRunOptions): Promise<number> {
  const random = seededRandom(options.seed);
  const worker = siblingScript(import.meta.url, "job-worker");
  let kills = 0;
  const { stop } = options;
  for (let run = 1; ; run++) {
    throwIfStopped(stop);
    const fault = kills < options.kills ? pickFault(random) : "";
    const { code, signal } = await new Promise<{ code: number | null; signal: string | null }>((resolve) => {
      const child = spawn(process.execPath, [...worker.execArgv, worker.path], {
        env: { ...process.env, WINDOW_SUM_CONFIG: JSON.stringify(config), EXACTLY_FAULT: fault },
        stdio: ["ignore", "inherit", "inherit"],
      });
      const kill = () => child.kill("SIGKILL");
      stop?.addEventListener("abort", kill, { once: true });
      child.on("exit", (c, s) => {
        stop?.removeEventListener("abort", kill);
        resolve({ code: c, signal: s });
      });
    });
    if (await stoppedWithin(stop, signal !== null && signal !== "SIGKILL" ? 1000 : 0)) throw new Stopped();
    if (signal === "SIGKILL") {
      kills++;
      options.log?.(`run ${run}: killed with SIGKILL at ${fault}; restarting from the latest checkpoint`);
      continue;
    }
    if (code === 0) {
      options.log?.(`run ${run}: finished${fault ? ` before reaching ${fault}` : ""}`);
      return kills;
    }
    throw new Error(`window-sum job failed with ${signal ? `signal ${signal}` : `exit code ${code}`}`);
  }
}

export async function runWindowSum(options: WindowSumRunOptions): Promise<WindowSumResult> {
  const run = randomUUID().slice(0, 8);
  const config: WindowSumConfig = {
    brokers: [...options.brokers],
    input: `window-sum-in-${run}`,
    output: `window-sum-out-${run}`,
    checkpoints: await mkdtemp(join(tmpdir(), "exactly-window-sum-")),
  };
  let kills: number;
  let elapsedSeconds: number;
  // The checkpoints are the run's own: its output is in the topics, which the summary names.
  try {
    options.log?.(`writing ${options.events} events to ${config.input} (${INPUT_PARTITIONS} partitions)`);
    await fillInput(config, options.events, options.stop);
    const startedAt = Date.now();
    kills = await runWithKills(config, options);
    elapsedSeconds = (Date.now() - startedAt) / 1000;
  } catch (error) {
    if (error instanceof Stopped) throw new WindowSumStoppedError(config.input, config.output);
    throw error;
  } finally {
    await rm(config.checkpoints, { recursive: true, force: true });
  }

  options.log?.(`checking ${config.output} against a batch computation, with our reader and with kcat`);
  const expected = expectedSums(options.events);
  const mismatches = compareWindows(expected, await readCommittedValues(options.brokers, config.output));
  const kcat = await readCommittedWithKcat(options.brokers, config.output);
  return {
    events: options.events,
    windows: expected.size,
    kills,
    elapsedSeconds,
    input: config.input,
    output: config.output,
    mismatches,
    kcatMismatches: kcat.status === "read" ? compareWindows(expected, kcat.values) : kcat.reason,
    kcatStatus: kcat.status === "read" ? "checked" : kcat.status,
  };
}
