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
}

export const RESULT_PREFIX = "BENCH_RESULT ";

export function report(result: Omit<CaseResult, "cpuSeconds" | "peakRssMb">): void {
  const usage = process.resourceUsage();
  const full: CaseResult = {
    ...result,
    cpuSeconds: (usage.userCPUTime + usage.systemCPUTime) / 1e6,
    peakRssMb: Math.round(usage.maxRSS / 1024),
  };
  process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(full)}\n`);
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
  let startedAt = 0;
  await job.execute({
    onRunning: () => {
      startedAt = performance.now();
    },
    onComplete: (_, info) => checkpointMs.push(info.durationMs),
    onCommitted: (_, info) => commitMs.push(info.durationMs),
  });
  report({ records, seconds: (performance.now() - startedAt) / 1000, checkpointMs, commitMs, startupMs: startedAt });
}
