/**
 * `@exactly/core/internal`: plumbing the built-in connectors, the conformance suite and the
 * CLI share with the runtime. Not for users: it carries no stability promise and is not part
 * of the API a pipeline or a custom sink is written against (that is `@exactly/core`). Each
 * name here is marked `@internal` where it is declared, and the API reference leaves such
 * names out (TypeDoc's `excludeInternal`).
 */

export type { CheckpointConfig } from "./checkpoint/checkpoint-coordinator.ts";
export {
  applyRetention,
  type CheckpointFolders,
  COMMITTED,
  inspectFolders,
  listCompleted,
  loadCheckpoint,
  loadLatest,
  METADATA,
  readMetadata,
} from "./checkpoint/checkpoint-folders.ts";
export { requirePositiveInteger } from "./errors.ts";
export { classifyFailure, errorChain } from "./failures.ts";
export { hashKey, keyGroupOf, keyGroupRange } from "./operators/key-groups.ts";
export type { KeyedStateSnapshot } from "./operators/keyed-state.ts";
export { formatPosition, type StreamElement } from "./records.ts";
export { type JobOrigin, originOf } from "./runtime/api/job-origin.ts";
export { IoTurns } from "./runtime/engine/io-turns.ts";
export {
  type ClaimHolder,
  type ClaimResult,
  claimInProcess,
  releaseInProcess,
} from "./runtime/engine/process-claims.ts";
export { ownsSubtaskIndex } from "./runtime/engine/restore-assignment.ts";
export {
  DEFAULT_MAX_RESTART_DELAY_MS,
  RestartBackoff,
  type RestartDecision,
} from "./runtime/runner/restart-strategy.ts";
export { CheckpointHead, type HeadState } from "./shards/checkpoint-head.ts";
export { FileConditionalRecord } from "./shards/file-conditional-record.ts";
// Whether a lease's successor on this machine can tell a killed holder is gone (the demo's lease).
export { canTellGoneHolders } from "./shards/lease-holder.ts";
// Every checkpoint of a location, sharded or not, as the tools read it (exactly lingering).
export {
  type LocationCheckpoint,
  type LocationCheckpoints,
  readLocationCheckpoints,
} from "./shards/location-checkpoints.ts";
// A sharded job's checkpoints (shards/), as the conformance suite reads them in its shard scenarios.
export { ShardCheckpointStorage } from "./shards/shard-checkpoint-storage.ts";
export { ShardLease } from "./shards/shard-lease.ts";
export { parseShard, shardFromHostname, shardOfProcess } from "./shards/shard-spec.ts";
export { transactionsInState } from "./sinks/lingering-work-finder.ts";
export { withRetry } from "./sinks/retry.ts";
export { siblingScript } from "./util/child-script.ts";
export {
  fsyncDirectory,
  isAlreadyExists,
  isNotFound,
  writeAll,
  writeFileAtomic,
  writeFileDurable,
} from "./util/durable-fs.ts";
export { seededRandom } from "./util/seeded-random.ts";
