import { type SinkContext, silentLogger } from "@exactly/core";

/**
 * A fresh start's context for opening a sink directly in a connector test, without a job:
 * no restored state, a silent logger, and checkpoint timing of 1 s / 10 s / 10 s.
 */
export function sinkContext(
  sinkId: string,
  options: { subtask?: number; parallelism?: number; storage?: SinkContext["storage"] } = {},
): SinkContext {
  return {
    sinkId,
    subtask: options.subtask ?? 0,
    parallelism: options.parallelism ?? 1,
    previousParallelism: undefined,
    restoredCheckpointId: undefined,
    restoredStates: [],
    allRestoredStates: [],
    storage: options.storage ?? (undefined as unknown as SinkContext["storage"]),
    logger: silentLogger,
    checkpointTiming: { intervalMs: 1000, timeoutMs: 10_000, restartDelayMs: 10_000 },
  };
}
