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
