import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { StreamJob } from "@exactly/core";

/** What one benchmark case reports, as the last line of its child process's stdout. */
export interface CaseResult {
  readonly records: number;
  /** From the first record to the last commit, excluding process start. */
  readonly seconds: number;
  readonly cpuSeconds: number;
  readonly peakRssMb: number;
  /** Trigger → durable metadata, per checkpoint; empty for cases without checkpoints. */
  readonly checkpointMs: readonly number[];
  /** Checkpoint complete → every sink committed, per checkpoint; empty for cases without checkpoints. */
  readonly commitMs?: readonly number[];
  /** Process start → every sink recovered and records flowing (framework cases). */
  readonly startupMs?: number;
  /** Process start → the first commit (framework cases): after a SIGKILL, the recovery time. */
  readonly firstCommitMs?: number;
}

export const RESULT_PREFIX = "BENCH_RESULT ";
/** A line a framework case prints at each commit when BENCH_SIGNAL_COMMITS is set, for the kill of a recovery run. */
export const COMMITTED_LINE = "BENCH_COMMITTED";

/**
 * The case runs again on the checkpoints of a run that was SIGKILLed (BENCH_RESUME=1): its
 * external resources (table, topic, key prefix) exist and are not made again.
 */
export const resuming = process.env.BENCH_RESUME === "1";

/** A generator's pace for the recovery runs (BENCH_RATE records/s), so that they last several checkpoints. */
export const pace: { ratePerSecond?: number } = process.env.BENCH_RATE
  ? { ratePerSecond: Number(process.env.BENCH_RATE) }
  : {};

/** Names of a case's external resources: the same for a run and its resumption (same directory). */
export function runId(dir: string): string {
  return createHash("sha256").update(dir).digest("hex").slice(0, 8);
}

/** Reports a case's result, with this process's CPU seconds and peak RSS. */
export function report(result: Omit<CaseResult, "cpuSeconds" | "peakRssMb">): void {
  const usage = process.resourceUsage();
  reportResult({
    ...result,
    cpuSeconds: (usage.userCPUTime + usage.systemCPUTime) / 1e6,
    peakRssMb: Math.round(usage.maxRSS / 1024),
  });
}

/** Reports a result whose CPU and memory are not this process's alone (a case of several processes). */
export function reportResult(result: CaseResult): void {
  process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`);
}

/**
 * Processes run at once, reported as one case over `records`: from the first one's records
 * flowing to the last one's last commit, CPU and peak RSS summed over them. `startedAt` is when
 * each one's records began to flow, on this process's clock.
 */
export async function reportTogether(
  records: number,
  runs: ReadonlyArray<Promise<CaseResult & { startedAt: number }>>,
): Promise<void> {
  const results = await Promise.all(runs);
  const start = Math.min(...results.map((r) => r.startedAt));
  const end = Math.max(...results.map((r) => r.startedAt + r.seconds * 1000));
  reportResult({
    records,
    seconds: (end - start) / 1000,
    checkpointMs: results.flatMap((r) => r.checkpointMs),
    commitMs: results.flatMap((r) => r.commitMs ?? []),
    cpuSeconds: results.reduce((sum, r) => sum + r.cpuSeconds, 0),
    peakRssMb: results.reduce((sum, r) => sum + r.peakRssMb, 0),
  });
}

/**
 * Runs one case's child process and gives the result it reported; rejects, naming `label`,
 * when the process ends badly or reports nothing.
 */
export function runCaseProcess(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  label: string,
): Promise<CaseResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "inherit"], env });
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    child.on("exit", (code, signal) => {
      const line = out.split("\n").find((l) => l.startsWith(RESULT_PREFIX));
      if (code !== 0 || !line) reject(new Error(`${label} ended with code ${code} signal ${signal}`));
      else resolve(JSON.parse(line.slice(RESULT_PREFIX.length)) as CaseResult);
    });
  });
}

/** The records every case writes: the same generator everywhere. */
export const benchRecord = (id: number) => ({ id, key: id % 1024, payload: `value-${id}` });

/**
 * Runs a framework case's job and reports it: records/s from the moment every sink recovered
 * and records flow (so process start and recovery are not counted, and show as startup ms),
 * with each checkpoint's duration and each commit's.
 */
export async function executeAndReport(job: StreamJob, records: number): Promise<void> {
  const checkpointMs: number[] = [];
  const commitMs: number[] = [];
  const signal = process.env.BENCH_SIGNAL_COMMITS === "1";
  let startedAt = 0;
  let firstCommitMs: number | undefined;
  await job.execute({
    onRunning: () => {
      startedAt = performance.now();
    },
    onComplete: (_, info) => checkpointMs.push(info.durationMs),
    onCommitted: (_, info) => {
      // performance.now() counts from the process's start.
      firstCommitMs ??= performance.now();
      commitMs.push(info.durationMs);
      if (signal) process.stdout.write(`${COMMITTED_LINE}\n`);
    },
  });
  report({
    records,
    seconds: (performance.now() - startedAt) / 1000,
    checkpointMs,
    commitMs,
    startupMs: startedAt,
    ...(firstCommitMs === undefined ? {} : { firstCommitMs }),
  });
}

/** What the soak job (soak-job.ts) reports, as a `BENCH_SOAK <json>` line. */
export const SOAK_PREFIX = "BENCH_SOAK ";

export interface SoakSamples {
  /** RSS every second; t in seconds since the job started. */
  readonly rss: ReadonlyArray<{ readonly t: number; readonly mb: number }>;
  /** Each checkpoint's duration, at the time it completed. */
  readonly checkpoints: ReadonlyArray<{ readonly t: number; readonly ms: number }>;
  readonly records: number;
  readonly seconds: number;
}
