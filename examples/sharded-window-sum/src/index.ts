export {
  compareWindows,
  runShardedWindowSum,
  type ShardedWindowSumOptions,
  type ShardedWindowSumResult,
  type ZombieOutcome,
} from "./run-sharded-window-sum.ts";
export {
  type Click,
  click,
  expectedWindows,
  INPUT_PARTITIONS,
  inputEnds,
  partitionOf,
  REPARTITION_PARTITIONS,
  type ShardedWindowSumConfig,
  type UserWindow,
  WINDOW_MS,
} from "./sharded-window-sum.ts";
