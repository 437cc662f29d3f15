export { type KcatRead, readCommittedValues, readCommittedWithKcat } from "./read-committed.ts";
export {
  compareWindows,
  runWindowSum,
  type WindowSumResult,
  type WindowSumRunOptions,
  WindowSumStoppedError,
} from "./run-window-sum.ts";
export {
  type Event,
  event,
  expectedSums,
  INPUT_PARTITIONS,
  partitionOf,
  startWindowSumJob,
  type WindowSum,
  type WindowSumConfig,
} from "./window-sum.ts";
