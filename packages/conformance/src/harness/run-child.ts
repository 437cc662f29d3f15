import { spawn } from "node:child_process";
import type { CheckpointStorage } from "@exactly/core";
import { siblingScript } from "@exactly/core/internal";
import {
  CHECKPOINT_PREFIX,
  type ChildConfig,
  type ChildOutcome,
  LANES,
  OUTCOME_PREFIX,
  SOURCE_ID,
} from "./child-protocol.ts";

export interface ChildRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly outcome: ChildOutcome | undefined;
  readonly stderr: string;
}

export interface RunOptions {
  /** Send SIGTERM (graceful stop) once the child reports this many completed checkpoints. */
  readonly stopAfterCheckpoints?: number;
  /** Called while the child runs, every ~100 ms, and once after it ends. */
  readonly poll?: () => Promise<unknown>;
}

const child = siblingScript(import.meta.url, "child-job");
/** The script that builds one sink and prints its declarations (see probe-sink.ts). */
export const probeScript = siblingScript(import.meta.url, "probe-sink");

/** A child process running the scenario job, watched while it runs (the shard scenarios). */
export interface RunningChild {
  readonly pid: number;
  /** Everything it printed on stdout so far. */
  stdout(): string;
  /** Everything it printed on stderr so far (the shard ownership lines of a sharded child). */
  stderr(): string;
  /** Checkpoints it reported completed so far. */
  checkpoints(): number;
  signal(signal: NodeJS.Signals): void;
  readonly ended: Promise<ChildRun>;
}

/** Starts the scenario job in a child process; `runChild` waits for it, the shard scenarios watch it. */
export function startChild(config: ChildConfig, options: RunOptions = {}): RunningChild {
  const proc = spawn(process.execPath, [...child.execArgv, child.path], {
    env: {
      ...process.env,
      CONFORMANCE_CONFIG: JSON.stringify(config),
      // A fault armed from the start (recovery's points); later ones the child arms itself.
      EXACTLY_FAULT: config.fault?.afterCheckpoints === 0 ? config.fault.spec : "",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  let checkpoints = 0;
  let stopSent = false;
  proc.stdout.on("data", (chunk) => {
    stdout += chunk;
    checkpoints = stdout.split(CHECKPOINT_PREFIX).length - 1;
    if (options.stopAfterCheckpoints === undefined || stopSent) return;
    if (checkpoints >= options.stopAfterCheckpoints) {
      stopSent = true;
      proc.kill("SIGTERM");
    }
  });
  proc.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on("exit", (code, signal) => resolve({ code, signal })),
  );
  const ended = (async (): Promise<ChildRun> => {
    let running = true;
    const polling = (async () => {
      while (running && options.poll) {
        await options.poll();
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const { code, signal } = await exited;
    running = false;
    await polling;
    await options.poll?.();
    const line = stdout.split("\n").find((l) => l.startsWith(OUTCOME_PREFIX));
    const outcome = line ? (JSON.parse(line.slice(OUTCOME_PREFIX.length)) as ChildOutcome) : undefined;
    return { code, signal, outcome, stderr: stderr.slice(-4000) };
  })();
  return {
    pid: proc.pid as number,
    stdout: () => stdout,
    stderr: () => stderr,
    checkpoints: () => checkpoints,
    signal: (signal) => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
    },
    ended,
  };
}

/** Runs the scenario job once in a child process and reports how it ended. */
export function runChild(config: ChildConfig, options: RunOptions = {}): Promise<ChildRun> {
  return startChild(config, options).ended;
}

/**
 * Which ids the latest completed checkpoint covers, from the job's own checkpoint
 * storage: id i is covered once its lane's position has passed it. Metadata is durable
 * before any sink is told to commit, so reading the reader first and this second can
 * never blame a sink for the runtime's own ordering.
 */
export async function coveredIds(storage: CheckpointStorage): Promise<(id: number) => boolean> {
  for (let attempt = 0; ; attempt++) {
    try {
      const latest = await storage.loadLatest();
      const lanes = new Array<number>(LANES).fill(0);
      if (latest) {
        for (const [task, state] of latest.states) {
          if (!task.startsWith(`${SOURCE_ID}/`)) continue;
          for (const [lane, next] of Object.entries(state as Record<string, number>)) lanes[Number(lane)] = next;
        }
      }
      return (id) => id < (lanes[id % LANES] as number);
    } catch (error) {
      // The child's retention may delete a checkpoint while we read it; read again.
      if (attempt >= 5) throw error;
    }
  }
}
