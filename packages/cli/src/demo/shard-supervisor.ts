/**
 * `exactly demo --shards N`: the demo job as N shard processes on this machine, handled as a
 * StatefulSet and a bad day would handle them (docs/design.md §2, Shards). At seeded moments
 * of the run (fractions of the time the paced source needs, not counting the time the events
 * themselves took: a shard's lane per key makes record ids no measure of progress) it SIGKILLs a shard's process and starts it again at once; once it pauses
 * one (SIGSTOP) past its lease while a replacement for the same shard takes over, then
 * resumes it (SIGCONT) — a zombie, which must be fenced; and once it rescales: every shard
 * stops with a final checkpoint (SIGTERM) and N′ processes start. The run ends when every
 * shard of the last layout finished.
 */
import { type ChildProcess, fork } from "node:child_process";
import { join } from "node:path";
import { declareRescale, FileSystemCheckpointStorage } from "@exactly/core";
import { seededRandom, siblingScript } from "@exactly/core/internal";
import { SingleBar } from "cli-progress";
import { stopSignalWithin, throwIfStopped } from "./demo-interrupt.ts";
import { CHECKPOINT_DIR, DEMO_LEASE_MS, type DemoJobConfig } from "./demo-job-config.ts";
import { DEMO_CONFIG_VARIABLE, type WorkerMessage } from "./demo-protocol.ts";
import type { PlannedKill } from "./kill-plan.ts";
import { DemoFailedError, SIGINT_GRACE_MS, type SupervisedRun } from "./supervisor.ts";
import { DEMO_TARGETS } from "./targets/demo-targets.ts";

export interface ShardedRun extends SupervisedRun {
  readonly shards: number;
  /** The shard count after the rescale. */
  readonly rescaledTo: number;
  /** The shard paused past its lease, and whether, resumed, its attempt was refused (fenced). */
  readonly zombie: { readonly shard: number; readonly resumed: boolean; readonly fenced: boolean };
}

export interface ShardSupervisorOptions {
  readonly config: DemoJobConfig;
  readonly shards: number;
  readonly plan: readonly PlannedKill[];
  readonly seed: number;
  readonly progress: boolean;
  /** Aborted by SIGINT or SIGTERM: every shard process is SIGKILLed, and StopRequested thrown once all are gone. */
  readonly stop?: AbortSignal;
}

/** The shard count the demo rescales to from `shards`: one fewer, or 2 from 1. */
export function rescaleTarget(shards: number): number {
  return shards > 1 ? shards - 1 : 2;
}

/** One process running one shard. */
interface ShardProcess {
  readonly shard: number;
  readonly child: ChildProcess;
  /** Started in place of a process the demo SIGKILLed: its first start is a recovery. */
  readonly replacesKilled: boolean;
  checkpoints: number;
  started: boolean;
  /** Attempts that failed because the shard was taken from it (a lost lease, a fenced head). */
  fenced: boolean;
  outcome: WorkerMessage | undefined;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const LOST_SHARD = /shard lease|of this shard is fenced/;

/**
 * The kill plan's moments, spread over 5 %–95 % of the run, are squeezed into its first 80 %:
 * the time estimate of where the run is lags behind when shards finish early, and a kill
 * planned for the very end would meet processes that already finished.
 */
const KILL_SPAN = 0.8;

export async function superviseShards(options: ShardSupervisorOptions): Promise<ShardedRun> {
  const { config, plan } = options;
  const worker = siblingScript(import.meta.url, "demo-worker");
  const random = seededRandom(options.seed ^ 0x5a17);
  const startedAt = Date.now();
  let layout = options.shards;
  const rescaledTo = rescaleTarget(layout);
  let peakRssKb = 0;
  let recoveries = 0;
  let restoredFromCheckpoint = 0;
  let checkpointsBefore = 0;
  let killed = 0;
  let planned = 0;
  /** Every process of the current layout, the paused and standing-by ones included. */
  let running: ShardProcess[] = [];
  const bar = options.progress
    ? new SingleBar({
        format: "demo |{bar}| {percentage}% read of {total} | shards {shards} | kills {killed}/{planned}",
        stream: process.stderr,
        hideCursor: true,
        noTTYOutput: true,
        notTTYSchedule: 1000,
      })
    : undefined;
  bar?.start(config.records, 0, { shards: layout, killed: 0, planned: plan.length });

  const start = (shard: number, replacesKilled = false): ShardProcess => {
    throwIfStopped(options.stop);
    const shardConfig: DemoJobConfig = { ...config, shard: { index: shard, count: layout }, leaseMs: DEMO_LEASE_MS };
    const child = fork(worker.path, [], {
      env: { ...process.env, [DEMO_CONFIG_VARIABLE]: JSON.stringify(shardConfig) },
      execArgv: worker.execArgv,
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const proc: ShardProcess = {
      shard,
      child,
      replacesKilled,
      checkpoints: 0,
      started: false,
      fenced: false,
      outcome: undefined,
      exited: new Promise((done) => child.on("exit", (code, signal) => done({ code, signal }))),
    };
    child.on("message", (message: WorkerMessage) => {
      switch (message.type) {
        case "started":
          proc.started = true;
          // Only the start of a process that replaces a killed one, or of a new attempt after a
          // failure, is a recovery: the first processes, the zombie's replacement and the
          // rescaled layout restore checkpoints too, but recover from nothing.
          if (replacesKilled || message.attempt > 1) {
            recoveries++;
            if (message.restoredCheckpointId !== undefined) restoredFromCheckpoint++;
          }
          break;
        case "restarted":
          if (LOST_SHARD.test(message.error)) proc.fenced = true;
          break;
        case "progress":
          proc.checkpoints = message.checkpoints;
          peakRssKb = Math.max(peakRssKb, message.maxRssKb);
          break;
        case "finished":
        case "failed":
          proc.outcome = message;
          break;
      }
    });
    running.push(proc);
    return proc;
  };
  const alive = (p: ShardProcess) => p.child.exitCode === null && p.child.signalCode === null;
  // Where the run is: the paced source's time since the start, less the time events took.
  const expectedMs = (config.records / (config.ratePerSecond ?? 500_000)) * 1000;
  let eventsMs = 0;
  const fraction = () => (Date.now() - startedAt - eventsMs) / expectedMs;
  const read = () => Math.min(config.records, Math.floor(fraction() * config.records));
  const timed = async (event: () => Promise<void>) => {
    const from = Date.now();
    await event();
    eventsMs += Date.now() - from;
  };
  const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** Throws once a stop signal came, a shard failed, or a process ended that neither finished nor was stopped by the demo. */
  const checkShards = async () => {
    throwIfStopped(options.stop);
    const failed = running.find((p) => p.outcome?.type === "failed");
    if (failed?.outcome?.type === "failed") throw new DemoFailedError(`shard ${failed.shard}: ${failed.outcome.error}`);
    // The demo's own kills and stops take the process out of `running` once it is gone, before
    // this runs again: a process here that ended with no outcome crashed (or Ctrl-C ended it).
    const ended = running.find((p) => !alive(p) && p.outcome === undefined);
    if (ended) {
      // Its last message may still be on its way, and Ctrl-C's SIGINT to the demo itself too.
      await stopSignalWithin(options.stop, SIGINT_GRACE_MS);
      throwIfStopped(options.stop);
      if (ended.outcome === undefined) {
        const { exitCode, signalCode } = ended.child;
        throw new DemoFailedError(
          `shard ${ended.shard}: its process ended (exit code ${exitCode}, signal ${signalCode})`,
        );
      }
    }
  };
  const until = async (check: () => boolean) => {
    while (!check()) {
      await wait(20);
      bar?.update(Math.min(read(), config.records), { shards: layout, killed });
      await checkShards();
    }
  };
  /** Processes a kill can hit: running a shard, not finished (a finished one has nothing to lose). */
  const victims = () => running.filter((p) => alive(p) && p.started && p.outcome === undefined);
  /** The process of `shard` that is running it now (the newest one). */
  const current = (shard: number) => running.filter((p) => p.shard === shard && alive(p)).at(-1);

  // A stop ends every process at once; the loop then throws at its next check, or start() does.
  const interrupt = () => {
    for (const p of running) if (alive(p)) p.child.kill("SIGKILL");
  };
  options.stop?.addEventListener("abort", interrupt, { once: true });
  const zombieAt = Math.floor(config.records * 0.3);
  const rescaleAt = Math.floor(config.records * 0.6);
  const zombie = { shard: Math.floor(random() * layout), resumed: false, fenced: false };
  let zombieDone = false;
  let rescaled = false;
  try {
    for (let shard = 0; shard < layout; shard++) start(shard);
    for (;;) {
      const progress = read();
      const next = plan[planned];
      if (!zombieDone && progress >= zombieAt) {
        zombieDone = true;
        const paused = current(zombie.shard);
        if (paused)
          await timed(async () => {
            // An owner that committed already: the pause catches it with work in flight.
            await until(() => paused.checkpoints > 0);
            paused.child.kill("SIGSTOP");
            const replacement = start(zombie.shard);
            // The replacement takes the shard once the paused owner's lease ran out, and commits.
            await until(() => replacement.started && replacement.checkpoints > 0);
            paused.child.kill("SIGCONT");
            zombie.resumed = true;
            await until(() => paused.fenced || !alive(paused));
            zombie.fenced = paused.fenced;
          });
      } else if (!rescaled && progress >= rescaleAt) {
        rescaled = true;
        // Every shard stops with a final checkpoint; processes standing by own nothing and just end.
        await timed(async () => {
          for (const p of running) if (alive(p)) p.child.kill(p.started && !p.fenced ? "SIGTERM" : "SIGKILL");
          await Promise.all(running.map((p) => p.exited));
          checkpointsBefore += running.reduce((sum, p) => sum + p.checkpoints, 0);
          running = [];
          // As an operator does (`exactly rescale`): a process of another count is refused otherwise.
          await declareLayout(config, rescaledTo);
          layout = rescaledTo;
          for (let shard = 0; shard < layout; shard++) start(shard);
        });
      } else if (next && progress >= next.atRecord * KILL_SPAN && victims().length > 0) {
        planned++;
        await wait(next.delayMs);
        const candidates = victims();
        const victim = candidates[Math.floor(random() * candidates.length)];
        if (victim?.child.kill("SIGKILL")) {
          killed++;
          await victim.exited;
          checkpointsBefore += victim.checkpoints;
          running = running.filter((p) => p !== victim);
          // As a StatefulSet does: the same shard again, at once. It takes the shard at once too:
          // the killed process is gone, which a process of the same machine can tell.
          start(victim.shard, true);
        }
      }
      const finished = Array.from({ length: layout }, (_, shard) =>
        running.some((p) => p.shard === shard && p.outcome?.type === "finished"),
      );
      if (rescaled && finished.every(Boolean)) break;
      await checkShards();
      await wait(20);
    }
    // A process standing by (the resumed zombie) takes the shard once its owner finished, finds
    // nothing left to read, and ends too.
    await Promise.all(running.map((p) => p.exited));
  } finally {
    options.stop?.removeEventListener("abort", interrupt);
    // Every process gone before the demo goes on: it removes the output they write to.
    for (const p of running) if (alive(p)) p.child.kill("SIGKILL");
    await Promise.all(running.map((p) => p.exited));
    bar?.stop();
  }
  checkpointsBefore += running.reduce((sum, p) => sum + p.checkpoints, 0);
  return {
    killed,
    killsAsked: plan.length,
    recoveries,
    restoredFromCheckpoint,
    resumedFrom: undefined,
    checkpoints: checkpointsBefore,
    elapsedSeconds: (Date.now() - startedAt) / 1000,
    peakRssKb,
    workers: config.workers ?? 1,
    shards: options.shards,
    rescaledTo,
    zombie,
  };
}

/** Declares the rescale to `count` shards where the demo job keeps its checkpoints. */
async function declareLayout(config: DemoJobConfig, count: number): Promise<void> {
  const target = DEMO_TARGETS[config.target?.sink ?? "file"];
  const storage =
    (await target.checkpoints?.(config.target?.settings ?? {})) ??
    new FileSystemCheckpointStorage(join(config.out, CHECKPOINT_DIR));
  try {
    await declareRescale(storage, count);
  } finally {
    (storage as { close?: () => void }).close?.();
  }
}
