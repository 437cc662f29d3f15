/**
 * The fork/SIGKILL loop of `exactly demo`: runs the demo job in a child process, kills it
 * with SIGKILL at the planned moments and starts it again, until one attempt finishes.
 */
import { type ChildProcess, fork } from "node:child_process";
import { ExactlyError } from "@exactly/core";
import { canTellGoneHolders, siblingScript } from "@exactly/core/internal";
import { SingleBar } from "cli-progress";
import { stopSignalWithin, throwIfStopped } from "./demo-interrupt.ts";
import { DEMO_LEASE_MS, type DemoJobConfig } from "./demo-job-config.ts";
import { DEMO_CONFIG_VARIABLE, type WorkerMessage } from "./demo-protocol.ts";
import type { PlannedKill } from "./kill-plan.ts";

/** The demo job's process ended on its own without finishing: the job failed, or the process died. */
export class DemoFailedError extends ExactlyError {
  constructor(reason: string) {
    super("DEMO_FAILED", `the demo job stopped without finishing: ${reason} (EXACTLY_DEMO_VERBOSE=1 prints its log)`);
  }
}

export interface SupervisedRun {
  /** SIGKILLs delivered (a planned kill can miss a child that has just ended). */
  readonly killed: number;
  /** Kills the plan asked for: more than `killed` when the run ended before the others landed. */
  readonly killsAsked: number;
  /**
   * Times the job started again after a kill (a new process) or a failure (a new attempt in its
   * process). Counted when it started, as `restoredFromCheckpoint` is, so that the two add up.
   */
  readonly recoveries: number;
  /** Recoveries that restored a completed checkpoint (the others started from the beginning). */
  readonly restoredFromCheckpoint: number;
  /** The checkpoint the first attempt of a resumed run restored, if any. */
  readonly resumedFrom: number | undefined;
  readonly checkpoints: number;
  readonly elapsedSeconds: number;
  readonly peakRssKb: number;
  /** Worker threads the job ran on (1: one event loop). */
  readonly workers: number;
}

export interface SupervisorOptions {
  readonly config: DemoJobConfig;
  readonly plan: readonly PlannedKill[];
  /** The run continues one that --out held. */
  readonly resumed: boolean;
  /** Draw a progress bar on stderr. */
  readonly progress: boolean;
  /** Aborted by SIGINT or SIGTERM: the child is SIGKILLed, and StopRequested thrown once it is gone. */
  readonly stop?: AbortSignal;
}

/** How long the demo waits for its own SIGINT after a child ended by SIGINT (stopSignalWithin). */
export const SIGINT_GRACE_MS = 500;

export async function superviseDemo({
  config,
  plan,
  resumed,
  progress,
  stop,
}: SupervisorOptions): Promise<SupervisedRun> {
  const worker = siblingScript(import.meta.url, "demo-worker");
  const bar = progress
    ? new SingleBar({
        format:
          "demo |{bar}| {percentage}% read of {total} | checkpoints {checkpoints} | kills {killed}/{planned} | recoveries {recoveries}",
        stream: process.stderr,
        hideCursor: true,
        noTTYOutput: true,
        notTTYSchedule: 1000,
      })
    : undefined;
  bar?.start(config.records, 0, { checkpoints: 0, killed: 0, planned: plan.length, recoveries: 0 });

  const startedAt = Date.now();
  let killed = 0;
  let recoveries = 0;
  let restoredFromCheckpoint = 0;
  let resumedFrom: number | undefined;
  let checkpointsBefore = 0;
  let peakRssKb = 0;
  let workers = 1;
  // A restarted child takes over the killed one's lease on its checkpoint location at once
  // where this machine can tell the killed one is gone (Linux); elsewhere it waits the lease out.
  const childConfig = (await canTellGoneHolders()) ? config : { ...config, leaseMs: DEMO_LEASE_MS };
  try {
    for (let attempt = 1; ; attempt++) {
      throwIfStopped(stop);
      let checkpointsNow = 0;
      let outcome: WorkerMessage | undefined;
      // The configuration holds the targets' URLs and keys: in the environment, not in argv,
      // where any local user reads it through ps or /proc/<pid>/cmdline.
      const child: ChildProcess = fork(worker.path, [], {
        env: { ...process.env, [DEMO_CONFIG_VARIABLE]: JSON.stringify(childConfig) },
        execArgv: worker.execArgv,
        stdio: ["ignore", "inherit", "inherit", "ipc"],
      });
      let killScheduled = false;
      child.on("message", (message: WorkerMessage) => {
        switch (message.type) {
          case "started":
            workers = message.workers;
            // A start of a new process after a kill, or of a new attempt after a failure, is a recovery.
            if (attempt > 1 || message.attempt > 1) {
              recoveries++;
              if (message.restoredCheckpointId !== undefined) restoredFromCheckpoint++;
            }
            if (attempt === 1 && message.attempt === 1 && resumed) resumedFrom = message.restoredCheckpointId;
            break;
          case "progress": {
            checkpointsNow = message.checkpoints;
            peakRssKb = Math.max(peakRssKb, message.maxRssKb);
            bar?.update(Math.min(message.generated, config.records), {
              checkpoints: checkpointsBefore + checkpointsNow,
              killed,
              recoveries,
            });
            const next = plan[killed];
            if (next && !killScheduled && message.generated >= next.atRecord) {
              killScheduled = true;
              setTimeout(() => {
                if (child.exitCode === null && child.signalCode === null && child.kill("SIGKILL")) killed++;
              }, next.delayMs);
            }
            break;
          }
          case "finished":
          case "failed":
            outcome = message;
            break;
        }
      });
      const interrupt = () => child.kill("SIGKILL");
      stop?.addEventListener("abort", interrupt, { once: true });
      const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
        child.on("exit", (c, s) => done({ code: c, signal: s })),
      );
      stop?.removeEventListener("abort", interrupt);
      if (signal === "SIGINT") await stopSignalWithin(stop, SIGINT_GRACE_MS);
      throwIfStopped(stop);
      checkpointsBefore += checkpointsNow;
      if (signal === "SIGKILL") continue;
      if (outcome?.type === "finished" && code === 0) {
        checkpointsBefore += Math.max(0, outcome.checkpoints - checkpointsNow);
        break;
      }
      const reason = outcome?.type === "failed" ? outcome.error : `exit code ${code}, signal ${signal}`;
      throw new DemoFailedError(reason);
    }
    bar?.update(config.records, { checkpoints: checkpointsBefore, killed, recoveries });
  } finally {
    bar?.stop();
  }
  const elapsedSeconds = (Date.now() - startedAt) / 1000;
  return {
    killed,
    killsAsked: plan.length,
    recoveries,
    restoredFromCheckpoint,
    resumedFrom,
    checkpoints: checkpointsBefore,
    elapsedSeconds,
    peakRssKb,
    workers,
  };
}
