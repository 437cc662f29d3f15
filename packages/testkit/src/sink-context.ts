import { type SinkContext, silentLogger } from "@exactly/core";

/**
 * A fresh start's context for opening a sink directly in a test, without a job: no restored
 * state, a silent logger, checkpoint timing of 1 s / 10 s / 10 s and no checkpoint storage,
 * each replaced by what `overrides` gives (a restore, a logger that keeps warnings, storage).
 */
export function sinkContext(sinkId: string, overrides: Partial<SinkContext> = {}): SinkContext {
  return {
    sinkId,
    subtask: 0,
    parallelism: 1,
    previousParallelism: undefined,
    restoredCheckpointId: undefined,
    restoredStates: [],
    allRestoredStates: [],
    storage: undefined as unknown as SinkContext["storage"],
    logger: silentLogger,
    checkpointTiming: { intervalMs: 1000, timeoutMs: 10_000, restartDelayMs: 10_000 },
    ...overrides,
  };
}
