import type { DeliveryGuarantee, Sink, SinkCapabilities } from "@exactly/core";

/**
 * One record of the suite's source: a unique id, and some payload to write. For sinks that
 * upsert, each record is also an update of `key` to `version` (the record's sequence number
 * within its key, increasing along the stream and the same on replay): an idempotent sink
 * keys by `key` and versions by `version`, and holds one record per key.
 */
export interface ConformanceRecord {
  readonly id: number;
  readonly key: string;
  readonly version: number;
  readonly payload: string;
}

/** What an upserting sink holds for one key, as a reader of the external system sees it. */
export interface HeldUpsert {
  readonly key: string;
  /** The id of the record whose value the key holds. */
  readonly id: number;
  /** The version the sink stored with it. */
  readonly version: number;
}

/**
 * Where one scenario runs. `id` is unique per scenario run (use it to name topics, tables,
 * key prefixes); `dir` is a scratch directory that lives across the scenario's runs.
 */
export interface ScenarioScope {
  readonly id: string;
  readonly dir: string;
}

/** What the sink factory gets in the child process. */
export interface SinkFactoryContext<O = unknown> {
  readonly scope: ScenarioScope;
  /** The definition's `sinkOptions`, as JSON. */
  readonly options: O;
}

/** The sink module's export: builds one sink instance per subtask, in the child process. */
export type ConformanceSinkFactory<O = unknown> = (context: SinkFactoryContext<O>) => Sink<ConformanceRecord>;

/**
 * How the sink keeps its promise; the suite picks its fault points and invariants from it.
 * The base class a sink extends decides it (TwoPhaseCommitSink, GenericWriteAheadSink,
 * IdempotentSink, FlushingSink); a sink that implements `Sink` directly states it. "flush" is
 * a sink that only flushes its writes at the barrier (at-least-once): it passes `mid-write`,
 * `after-pre-commit` (after the flush) and the runtime's `after-checkpoint-durable`.
 */
export type SinkLifecycle = "two-phase-commit" | "write-ahead" | "idempotent" | "flush";

export const SCENARIOS = [
  "clean-run",
  "graceful-stop",
  "crash-after-begin",
  "crash-mid-write",
  "crash-after-pre-commit",
  "crash-after-checkpoint-durable",
  "crash-mid-commit",
  "crash-during-recovery-commit",
  "crash-during-lingering-abort",
  "double-crash",
  "crash-during-replay",
  "kill-inside-commit",
  "kill-inside-recovery",
  "random-kills",
  "rescale-up",
  "rescale-down",
  "restore-across-owners",
  "duplicate-notifications",
  "late-notifications",
  "notification-after-next-barrier",
  "declined-checkpoint",
  "transaction-timeout",
  "batch-sizes",
  "volume",
  "chaos",
  "worker-threads",
  "zombie",
  "double-identity",
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

/**
 * What a sink author gives the suite. `sinkModule` is loaded by a child process (so the
 * suite can kill it); the reader and the probe run in the test process.
 *
 * The sink declares its guarantee and capabilities once, on the sink: before planning, the
 * suite builds one sink from `sinkModule` in a child process and plans from what that sink
 * declares and which base class it extends. `guarantee`, `lifecycle` and `capabilities`
 * here are optional; any that is stated is checked against the sink, and a definition that
 * claims something its sink does not declare fails the suite before its first scenario.
 */
export interface ConformanceDefinition<O = unknown> {
  readonly name: string;
  /** Absolute path or file URL of a module exporting the sink factory. */
  readonly sinkModule: string | URL;
  /** The export to use; default `createSink`. */
  readonly sinkExport?: string;
  /** JSON passed to the factory in the child (connection strings, directories …). */
  readonly sinkOptions?: O;
  /**
   * Optional: the export of `sinkModule` that makes the job's checkpoint storage,
   * `(context: SinkFactoryContext<O>) => CheckpointStorage`, called in the child for the job
   * and in the test process to read what the checkpoints cover. Default: a
   * `FileSystemCheckpointStorage` in the scenario's directory.
   */
  readonly checkpointStorageExport?: string;
  /** Optional, checked: must be the sink's own `guarantee`. */
  readonly guarantee?: DeliveryGuarantee;
  /**
   * Needed only for a sink that implements `Sink` directly: which base class's fault points
   * it passes. For a sink on a base class it is optional and must match that base class.
   */
  readonly lifecycle?: SinkLifecycle;
  /**
   * Optional, checked: each flag stated must be what the sink's own `capabilities` says
   * (`rescale` enables the rescale scenarios; an undeclared flag counts as false).
   */
  readonly capabilities?: SinkCapabilities;
  /**
   * The external system's transaction timeout, if it has one. The transaction-timeout
   * scenario holds a pre-committed transaction longer than this. A `TwoPhaseCommitSink`
   * declares its own (`transactionTimeoutMs`); stated here as well, it must agree.
   */
  readonly transactionTimeoutMs?: number;
  /**
   * Required for every sink that does not declare `capabilities.upserts`. Ids a committed reader sees now (a read_committed consumer, a fresh SQL session, a
   * listing). `phase` is "running" while the job runs (polled for I1, docs/design.md §3) and "ended" once it
   * has stopped: a system that finishes a commit after acknowledging it (Kafka writes
   * transaction markers asynchronously) may wait to settle then.
   */
  readCommitted?(scope: ScenarioScope, phase: "running" | "ended"): Promise<number[]>;
  /**
   * Required for a sink that declares `capabilities.upserts` (an `IdempotentSink`), in place
   * of `readCommitted`: what each key holds now, with the version stored beside it. The
   * suite checks, per key, that a polling reader never sees it move back to an older
   * record, that a record is always stored with the same version (deterministic under
   * replay), and that the end state holds each key's last record.
   */
  readUpserts?(scope: ScenarioScope, phase: "running" | "ended"): Promise<HeldUpsert[]>;
  /** Lingering resources of the sink left in the scope (open transactions, temp files, uploads). */
  probeLingering?(scope: ScenarioScope): Promise<string[]>;
  /** Called once before a scenario's first run (create topics, tables …). */
  setup?(scope: ScenarioScope): Promise<void>;
  /** Called after a scenario (drop what setup created). */
  teardown?(scope: ScenarioScope): Promise<void>;
  /** Scenarios this sink does not run, each with the reason the report prints. */
  readonly skip?: Partial<Record<ScenarioName, string>>;
  /**
   * Optional: worker threads for every scenario's job (subtask i on thread i mod `workers`),
   * to run the whole suite with the sink's subtasks on different threads. Default 1: one
   * event loop, except in the `worker-threads` scenario, which always uses two.
   */
  readonly workers?: number;
}
