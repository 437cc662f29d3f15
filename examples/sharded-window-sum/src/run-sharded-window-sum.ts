/**
 * Runs the sharded window sum end to end against a real broker, as a bad day would: 2 shards
 * of the group before the repartition topic and 3 of the group after, each a process of its
 * own, while the input is written. At seeded moments of the writing it SIGKILLs a process of
 * either group and starts the same shard again at once (as a StatefulSet does); once in each
 * group it pauses a process (SIGSTOP) while a replacement takes its shard and commits, then
 * resumes it, a zombie that must be fenced; and it rescales each group once (SIGTERM,
 * `declareRescale`, the new count of processes): the group before from 2 shards to 3, so the
 * topic gets a new set of writers, and the group after from 3 to 2. Then it checks every
 * window of the output against a batch computation of the input.
 */
import { type ChildProcess, fork } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { declareRescale, FIRST_GROUP, FileSystemCheckpointStorage } from "@exactly/core";
import { seededRandom, siblingScript } from "@exactly/core/testing";
import { readCommittedValues } from "@exactly/example-kafka-window-sum";
import { Admin, ProduceAcks, Producer } from "@platformatic/kafka";
import type { ShardWorkerMessage, ShardWorkerSetup } from "./shard-worker.ts";
import {
  click,
  expectedWindows,
  INPUT_PARTITIONS,
  partitionOf,
  type ShardedWindowSumConfig,
  type UserWindow,
} from "./sharded-window-sum.ts";

const DOWNSTREAM = "downstream";
const SHARDS = { [FIRST_GROUP]: 2, [DOWNSTREAM]: 3 } as const;
/** Each group is rescaled once: the group before to 3 shards (3 writers of the topic), the group after to 2. */
const RESCALED_TO = { [FIRST_GROUP]: 3, [DOWNSTREAM]: 2 } as const;

export interface ShardedWindowSumOptions {
  readonly brokers: readonly string[];
  readonly clicks: number;
  /** Clicks written a second while the job runs. Default 40,000. */
  readonly ratePerSecond?: number;
  /** SIGKILLs, taking turns between the groups (the group before first). */
  readonly kills: number;
  readonly seed: number;
  /** The shards' lease: how long a paused owner keeps its shard. Default 1 s. */
  readonly leaseMs?: number;
  /** Keep every record of the repartition topic (its readers delete none), to read it whole after. */
  readonly keepRepartitionTopic?: boolean;
  readonly log?: (line: string) => void;
}

export interface ZombieOutcome {
  readonly shard: number;
  /** Resumed after its replacement committed, its attempt was refused: fenced. */
  readonly fenced: boolean;
}

export interface ShardedWindowSumResult {
  readonly clicks: number;
  readonly windows: number;
  readonly kills: { readonly upstream: number; readonly downstream: number };
  readonly zombies: { readonly upstream: ZombieOutcome; readonly downstream: ZombieOutcome };
  readonly rescaled: {
    readonly upstream: { readonly from: number; readonly to: number };
    readonly downstream: { readonly from: number; readonly to: number };
  };
  readonly elapsedSeconds: number;
  readonly topics: { readonly input: string; readonly repartition: string; readonly output: string };
  /** Differences between the committed output and the batch computation (empty: exactly once). */
  readonly mismatches: string[];
}

/** One process running one shard of one group. */
interface ShardProcess {
  readonly group: string;
  readonly shard: number;
  readonly child: ChildProcess;
  checkpoints: number;
  started: boolean;
  /** An attempt failed because the shard was taken from it (a lost lease, a fenced head). */
  fenced: boolean;
  finished: boolean;
  /** Killed, paused past its lease or stopped by the run: its end is no failure. */
  endedByRun: boolean;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const LOST_SHARD = /shard lease|of this shard is fenced/;

/** Compares the committed windows (JSON lines) with the batch computation. */
export function compareWindows(
  expected: ReadonlyMap<string, { sum: number; count: number }>,
  lines: readonly string[],
): string[] {
  const actual = new Map<string, UserWindow>();
  const problems: string[] = [];
  for (const line of lines) {
    const w = JSON.parse(line) as UserWindow;
    const slot = `${w.user}@${w.start}`;
    if (actual.has(slot)) problems.push(`window ${slot} emitted twice`);
    actual.set(slot, w);
  }
  for (const [slot, want] of expected) {
    const got = actual.get(slot);
    if (!got) problems.push(`window ${slot} missing`);
    else if (got.sum !== want.sum || got.count !== want.count)
      problems.push(`window ${slot}: sum ${got.sum}, count ${got.count} instead of ${want.sum}, ${want.count}`);
  }
  for (const slot of actual.keys()) if (!expected.has(slot)) problems.push(`window ${slot} never existed`);
  return problems;
}

export async function runShardedWindowSum(options: ShardedWindowSumOptions): Promise<ShardedWindowSumResult> {
  const run = randomUUID().slice(0, 8);
  const config: ShardedWindowSumConfig = {
    brokers: [...options.brokers],
    input: `sharded-window-sum-in-${run}`,
    repartition: `sharded-window-sum-by-user-${run}`,
    output: `sharded-window-sum-out-${run}`,
    clicks: options.clicks,
    checkpoints: await mkdtemp(join(tmpdir(), "exactly-sharded-window-sum-")),
    ...(options.keepRepartitionTopic ? { keepRepartitionTopic: true } : {}),
  };
  const log = options.log ?? (() => {});
  const random = seededRandom(options.seed);
  const worker = siblingScript(import.meta.url, "shard-worker");
  const leaseMs = options.leaseMs ?? 1000;
  const counts: Record<string, number> = { ...SHARDS };
  let processes: ShardProcess[] = [];
  let failure: string | undefined;

  const start = (group: string, shard: number): ShardProcess => {
    const setup: ShardWorkerSetup = { config, group, shard: { index: shard, count: counts[group] as number }, leaseMs };
    const child = fork(worker.path, [], {
      env: { ...process.env, SHARD_WORKER_SETUP: JSON.stringify(setup) },
      execArgv: worker.execArgv,
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const proc: ShardProcess = {
      group,
      shard,
      child,
      checkpoints: 0,
      started: false,
      fenced: false,
      finished: false,
      endedByRun: false,
      exited: new Promise((done) => child.on("exit", (code, signal) => done({ code, signal }))),
    };
    child.on("message", (message: ShardWorkerMessage) => {
      if (message.type === "started") proc.started = true;
      else if (message.type === "checkpoint") proc.checkpoints++;
      else if (message.type === "restarted" && LOST_SHARD.test(message.error)) proc.fenced = true;
      else if (message.type === "finished") proc.finished = true;
    });
    void proc.exited.then(({ code, signal }) => {
      if (!proc.endedByRun && code !== 0)
        failure ??= `${group} shard ${shard}: its process ended (exit code ${code}, signal ${signal})`;
    });
    processes.push(proc);
    return proc;
  };
  const alive = (p: ShardProcess) => p.child.exitCode === null && p.child.signalCode === null;
  const until = async (what: string, check: () => boolean, limitMs = 60_000) => {
    const deadline = Date.now() + limitMs;
    while (!check()) {
      if (failure) throw new Error(failure);
      if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
      await sleep(20);
    }
  };
  /** The process running `shard` of `group` now: the newest one that is alive and not fenced. */
  const owner = (group: string, shard: number) =>
    processes.filter((p) => p.group === group && p.shard === shard && alive(p) && !p.fenced).at(-1);
  const end = async (p: ShardProcess, signal: NodeJS.Signals) => {
    p.endedByRun = true;
    p.child.kill(signal);
    await p.exited;
  };

  const kills = { upstream: 0, downstream: 0 };
  const zombie = async (group: string): Promise<ZombieOutcome> => {
    const shard = Math.floor(random() * (counts[group] as number));
    const paused = owner(group, shard);
    if (!paused) return { shard, fenced: false };
    // An owner that committed already: the pause catches it with work in flight.
    await until(`${group} shard ${shard} commits`, () => paused.checkpoints > 0);
    paused.child.kill("SIGSTOP");
    const replacement = start(group, shard);
    await until(`the replacement of ${group} shard ${shard} commits`, () => replacement.checkpoints > 0);
    paused.child.kill("SIGCONT");
    await until(`the resumed ${group} shard ${shard} is fenced`, () => paused.fenced || !alive(paused));
    log(`${group} shard ${shard}: paused past its lease, replaced, resumed and ${paused.fenced ? "fenced" : "gone"}`);
    // It now stands by for the shard, as a second pod would; it owns nothing.
    paused.endedByRun = true;
    return { shard, fenced: paused.fenced };
  };
  const kill = async (group: "upstream" | "downstream") => {
    const victims = processes.filter((p) => p.group === group && alive(p) && p.started && !p.fenced && !p.finished);
    const victim = victims[Math.floor(random() * victims.length)];
    if (!victim) return;
    await end(victim, "SIGKILL");
    kills[group]++;
    log(`${group} shard ${victim.shard}: SIGKILLed; started again`);
    start(group, victim.shard);
  };
  /** Every shard of `group` stops with a final checkpoint; the rescale is declared; the new count starts. */
  const rescale = async (group: typeof FIRST_GROUP | typeof DOWNSTREAM) => {
    for (const p of processes.filter((q) => q.group === group && alive(q)))
      await end(p, p.started && !p.fenced ? "SIGTERM" : "SIGKILL");
    processes = processes.filter((p) => p.group !== group);
    const storage = new FileSystemCheckpointStorage(join(config.checkpoints, `group-${group}`));
    await declareRescale(storage, RESCALED_TO[group]);
    counts[group] = RESCALED_TO[group];
    for (let shard = 0; shard < RESCALED_TO[group]; shard++) start(group, shard);
    log(`${group}: rescaled from ${SHARDS[group]} shards to ${RESCALED_TO[group]}`);
  };

  // The moments, as fractions of the input written: the zombies and the rescale at fixed
  // ones, the kills spread between, taking turns between the groups.
  const events: Array<{ at: number; run: () => Promise<void> }> = [];
  const zombies: Partial<Record<"upstream" | "downstream", ZombieOutcome>> = {};
  events.push({
    at: 0.1,
    run: async () => {
      zombies.upstream = await zombie(FIRST_GROUP);
    },
  });
  events.push({
    at: 0.4,
    run: async () => {
      zombies.downstream = await zombie(DOWNSTREAM);
    },
  });
  events.push({ at: 0.3, run: () => rescale(FIRST_GROUP) });
  events.push({ at: 0.6, run: () => rescale(DOWNSTREAM) });
  for (let i = 0; i < options.kills; i++) {
    const group = i % 2 === 0 ? "upstream" : "downstream";
    events.push({ at: 0.2 + (0.7 * (i + random())) / Math.max(1, options.kills), run: () => kill(group) });
  }
  events.sort((a, b) => a.at - b.at);

  const startedAt = Date.now();
  try {
    await createTopics(config);
    for (const [group, count] of Object.entries(SHARDS)) for (let s = 0; s < count; s++) start(group, s);
    let written = 0;
    const filling = fillInput(config, options.ratePerSecond ?? 40_000, (n) => {
      written = n;
    });
    let fillError: unknown;
    filling.catch((error: unknown) => {
      fillError = error;
    });
    for (const event of events) {
      await until(
        "the input is written that far",
        () => fillError !== undefined || written >= event.at * config.clicks,
      );
      if (fillError) throw fillError;
      await event.run();
    }
    await filling;
    // The group before ends with its input: every shard's owner finishes, and a resumed zombie
    // standing by takes its shard after, finds nothing left, and finishes too.
    await until(
      "every shard of the group before finished",
      () => processes.filter((p) => p.group === FIRST_GROUP && alive(p) && !p.finished).length === 0,
      120_000,
    );
    log(`the group before finished its input`);
    const expected = expectedWindows(config.clicks);
    // The group after reads on; it is done once every window is out.
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (failure) throw new Error(failure);
      const out = (await readCommittedValues(config.brokers, config.output)).length;
      if (out >= expected.size) break;
      if (Date.now() > deadline)
        throw new Error(`the group after wrote ${out} windows of ${expected.size} in 120 s after its input ended`);
      await sleep(500);
    }
    log(`the group after wrote every window`);
    for (const p of processes.filter((q) => alive(q))) await end(p, p.started && !p.fenced ? "SIGTERM" : "SIGKILL");
    const elapsedSeconds = (Date.now() - startedAt) / 1000;
    const mismatches = compareWindows(expected, await readCommittedValues(config.brokers, config.output));
    return {
      clicks: config.clicks,
      windows: expected.size,
      kills,
      zombies: {
        upstream: zombies.upstream ?? { shard: -1, fenced: false },
        downstream: zombies.downstream ?? { shard: -1, fenced: false },
      },
      rescaled: {
        upstream: { from: SHARDS[FIRST_GROUP], to: RESCALED_TO[FIRST_GROUP] },
        downstream: { from: SHARDS[DOWNSTREAM], to: RESCALED_TO[DOWNSTREAM] },
      },
      elapsedSeconds,
      topics: { input: config.input, repartition: config.repartition, output: config.output },
      mismatches,
    };
  } finally {
    for (const p of processes) if (alive(p)) await end(p, "SIGKILL");
    await rm(config.checkpoints, { recursive: true, force: true });
  }
}

async function createTopics(config: ShardedWindowSumConfig): Promise<void> {
  const admin = new Admin({ clientId: "sharded-window-sum", bootstrapBrokers: config.brokers });
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
}

/** Writes the clicks, each partition's in id order, at about `ratePerSecond`; reports how many are written. */
async function fillInput(
  config: ShardedWindowSumConfig,
  ratePerSecond: number,
  progress: (written: number) => void,
): Promise<void> {
  // The client retries a send whose partition has no leader yet (a topic just created).
  const producer = new Producer({
    clientId: "sharded-window-sum",
    bootstrapBrokers: config.brokers,
    idempotent: true,
    retries: 20,
  });
  const began = Date.now();
  try {
    const chunk = 2000;
    for (let from = 0; from < config.clicks; from += chunk) {
      const messages = [];
      for (let id = from; id < Math.min(config.clicks, from + chunk); id++)
        messages.push({
          topic: config.input,
          partition: partitionOf(id),
          value: Buffer.from(JSON.stringify(click(id))),
        });
      await producer.send({ acks: ProduceAcks.ALL, messages });
      progress(Math.min(config.clicks, from + chunk));
      const due = began + ((from + chunk) / ratePerSecond) * 1000;
      if (due > Date.now()) await sleep(due - Date.now());
    }
  } finally {
    await producer.close();
  }
}
