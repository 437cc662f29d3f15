// `@exactly/core`: what a job, a source or a sink is written against, and nothing else. Each
// name here is marked `@public` where it is declared; plumbing the connectors, the CLI and the
// conformance suite share with the runtime is in `./internal.ts`, marked `@internal`, which the
// API reference leaves out (TypeDoc's `excludeInternal`).
export type { CheckpointListener } from "./checkpoint/checkpoint-coordinator.ts";
export type {
  CheckpointMetadata,
  CheckpointStorage,
  InspectedCheckpoint,
  LogStore,
  RestoredCheckpoint,
  StoredTaskState,
} from "./checkpoint/checkpoint-storage.ts";
export type { CheckpointingMode } from "./checkpoint/checkpointing-mode.ts";
export {
  FileSystemCheckpointStorage,
  type FileSystemCheckpointStorageOptions,
} from "./checkpoint/filesystem-checkpoint-storage.ts";
export {
  CancelledError,
  CheckpointStorageError,
  CommitFailedError,
  ConfigurationError,
  type CustomErrorCode,
  type ErrorCode,
  ExactlyError,
  JobFailedError,
  RecordProcessingError,
  RecordWriteError,
  SinkNotOpenError,
  TransactionLostError,
  TransientError,
} from "./errors.ts";
export {
  type FailureKind,
  isTransientByDefault,
} from "./failures.ts";
export { DeliveryGuarantee, type SinkCapabilities } from "./guarantee.ts";
export { consoleLogger, type Logger, silentLogger } from "./logger.ts";
export { type CheckpointResult, type JobMetrics, noMetrics, type TaskLabels } from "./metrics.ts";
export type { Key } from "./operators/key-groups.ts";
export type { KeyedProcessContext, KeyedProcessFunction, ValueState } from "./operators/keyed-process.ts";
export { type AggregateFunction, TumblingEventTimeWindows, type WindowResult } from "./operators/window.ts";
export type { Batch, RecordPosition } from "./records.ts";
export {
  DataStream,
  type KeyByOptions,
  KeyedStream,
  type StageOptions,
  WindowedStream,
} from "./runtime/api/data-stream.ts";
export type { WatermarkStrategy } from "./runtime/api/job-graph.ts";
export { type JobModule, type JobRuntime, type LoadJobOptions, loadJob } from "./runtime/api/job-module.ts";
export { FIRST_GROUP, type Repartition, type RepartitionRoute } from "./runtime/api/repartition.ts";
export {
  type CheckpointOptions,
  type ShardLeaseSettings,
  StreamJob,
  type StreamJobOptions,
} from "./runtime/api/stream-job.ts";
export {
  type ExchangeCodec,
  jsonExchangeCodec,
  smallInteger,
  structuredExchangeCodec,
} from "./runtime/engine/exchange/exchange-codec.ts";
export type { Execution } from "./runtime/engine/execution.ts";
export type { JobIdentity } from "./runtime/engine/restore-identity.ts";
export type { JobClient, JobEvents, JobResult } from "./runtime/runner/job-runner.ts";
export type { RestartStrategy } from "./runtime/runner/restart-strategy.ts";
export { ShardFencedError } from "./shards/checkpoint-head.ts";
export { type ConditionalRecord, InvalidRecordError, type VersionedValue } from "./shards/conditional-record.ts";
export type { LeaseHolderProcess } from "./shards/lease-holder.ts";
export { LocationHeldError } from "./shards/location-owner.ts";
export { type BaseCheckpoint, declareRescale, type ShardLayout } from "./shards/shard-layout.ts";
export { type LeaseState, ShardLeaseLostError, type ShardLeaseOptions } from "./shards/shard-lease.ts";
export type { ShardOwnership } from "./shards/shard-owner.ts";
export { ownsKey, type ShardSpec } from "./shards/shard-spec.ts";
export { FlushingSink } from "./sinks/flushing-sink.ts";
export { IdempotentSink, type IdempotentSinkOptions, type Upsert } from "./sinks/idempotent-sink.ts";
export type { LingeringContext } from "./sinks/lingering-context.ts";
export type {
  LingeringWork,
  LingeringWorkFinder,
  StateReferences,
} from "./sinks/lingering-work-finder.ts";
export type { RetryOptions } from "./sinks/retry.ts";
export {
  type PendingWork,
  type Sink,
  type SinkContext,
  type SinkFactory,
  writeEachRecord,
} from "./sinks/sink.ts";
export {
  type AsyncFenceStore,
  AsyncSinkFence,
  checkShardHead,
  type FenceStore,
  fencedSubtaskIndexes,
  SinkFence,
  type StoredEpoch,
} from "./sinks/sink-fences.ts";
export {
  type CommitContext,
  type TransactionContext,
  TwoPhaseCommitSink,
  type TwoPhaseCommitSinkOptions,
  type TwoPhaseCommitState,
} from "./sinks/two-phase-commit-sink.ts";
export {
  type CheckpointCommitter,
  GenericWriteAheadSink,
  type GenericWriteAheadSinkOptions,
  jsonCodec,
  type LoggedRecords,
  type PendingLog,
  type RecordCodec,
  type WriteAheadState,
} from "./sinks/write-ahead-sink.ts";
export { ArraySource } from "./sources/array-source.ts";
export { FileSource, type FileSourceOptions } from "./sources/file-source.ts";
export { GeneratorSource, type GeneratorSourceOptions } from "./sources/generator-source.ts";
export {
  ownsSplit,
  type Source,
  type SourceReader,
  type SourceReaderContext,
  splitPerKey,
} from "./sources/source.ts";
