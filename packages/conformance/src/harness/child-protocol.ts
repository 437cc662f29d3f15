import type { ScenarioScope, SinkLifecycle } from "../definition.ts";

/** The sink hooks the harness can kill the child inside of (a random kill, see {@link KillPlan}). */
export const HOOKS = ["open", "writeBatch", "snapshotState", "notifyCheckpointComplete"] as const;
export type Hook = (typeof HOOKS)[number];

/**
 * A kill inside a sink call, between two of the sink's own external calls: once
 * `afterCheckpoints` checkpoints have completed, the next call of `hook` that gets that far
 * is killed right before it starts its `io`-th external operation (counted from 0: a file
 * system request, a socket write or connect; anything that leaves the process). The data
 * the sink sent before stays; nothing after it happens. A call that ends with fewer
 * operations leaves the kill armed for the next call, with `io` folded into that call's
 * length (so a next call as long is hit inside); after a few such calls, or many that made
 * no operation, the child dies right after one. `open` happens once a run, so the child
 * dies right after it instead.
 */
export interface KillPlan {
  readonly hook: Hook;
  readonly afterCheckpoints: number;
  readonly io: number;
  /**
   * "call": count the operations the call's own async context starts. "process": count
   * every operation the process starts while the call is in flight, for a sink whose client
   * sends from a context of its own (a request queue, a connection's loop).
   */
  readonly count: "call" | "process";
}

export type OpenOrder = "cleanup-first" | "commits-first";

/** A named fault point, armed once `afterCheckpoints` checkpoints have completed. */
export interface FaultPlan {
  /** `<point>@<n>`, counted from the moment it is armed. */
  readonly spec: string;
  readonly afterCheckpoints: number;
}

/**
 * A sharded child pauses itself (SIGSTOP) once `afterCheckpoints` checkpoints completed, at
 * the next barrier of a subtask that wrote records since its last one, right before that
 * subtask's `snapshotState`: the sink holds an open transaction with work in it. It prints
 * {@link PAUSED_PREFIX} first. When the test process resumes it (SIGCONT), the snapshot runs
 * (pre-commit, and the next transaction begun: the zombie's first writes after the
 * takeover); the child prints {@link RESUMED_PREFIX} with what came of it, and if the
 * sink took that work, the child SIGKILLs itself, as an orchestrator does to a pod it
 * gave up on: whatever the zombie did after the takeover stays for the checks to find.
 */
export interface ZombiePlan {
  readonly afterCheckpoints: number;
}

/** What the test process tells the child job, through the CONFORMANCE_CONFIG variable. */
export interface ChildConfig {
  readonly sinkModule: string;
  readonly sinkExport: string;
  readonly sinkOptions: unknown;
  /** The sink module's checkpoint storage factory, or null for the file system in the scope's directory. */
  readonly checkpointStorageExport: string | null;
  readonly scope: ScenarioScope;
  readonly records: number;
  readonly parallelism: number;
  /** Worker threads the job's subtasks run on; default 1 (one event loop). */
  readonly workers?: number;
  /** Records per second over all readers; undefined: as fast as the sink takes them. */
  readonly ratePerSecond: number | undefined;
  readonly batchSize: number;
  readonly checkpointIntervalMs: number;
  readonly checkpointTimeoutMs: number;
  /**
   * How completion notifications reach the sink: as the runtime sends them, twice, with
   * late repeats of older ones, or held until the sink has pre-committed the next
   * checkpoint (complete(n) after snapshot(n+1)).
   */
  readonly notifications: "normal" | "duplicate" | "late" | "after-next-barrier";
  /**
   * With "after-next-barrier": the child kills itself right after the k-th such late
   * notification reached the sink, before checkpoint n+1 can complete.
   */
  readonly killAfterLateNotification?: number;
  /**
   * Decline this checkpoint after the sink pre-committed it: subtask 0 (another task, slow)
   * outlasts the checkpoint timeout before its snapshot; the other subtasks pre-commit at once.
   */
  readonly declineCheckpoint?: number;
  /**
   * Subtask 0 (another task, slow) waits this long before every snapshot, so the other
   * subtasks spend that time writing into a transaction begun after a checkpoint that has
   * not completed: work a crash then leaves for recovery to clean up.
   */
  readonly slowSnapshotMs?: number;
  /**
   * With `slowSnapshotMs`: once this many checkpoints completed, the child kills itself at
   * the end of subtask 0's wait, when every other subtask has pre-committed and is writing
   * into a transaction of a checkpoint that will never complete.
   */
  readonly killInSlowSnapshotAfter?: number;
  /** Hold every completion notification this long before the sink sees it (commits wait, work stays pending). */
  readonly holdCommitsMs?: number;
  /**
   * Which subtasks open first after a restore, so the order of recovery is the plan's, not
   * chance's. Subtask 0 cleans up every index at or above the parallelism (the others only
   * their own), so it is the one whose cleanup can meet another subtask's restored work:
   * "cleanup-first": subtask 0 opens (commits what it restored, aborts lingering work,
   * begins) before any other subtask starts its open, so another subtask's restored
   * pre-committed work is still uncommitted while subtask 0 cleans up;
   * "commits-first": every other subtask opens (recovery commits, then a new transaction
   * begun) before subtask 0 starts its open.
   * Undefined: every subtask opens at once, as the runtime does.
   */
  readonly openOrder?: OpenOrder;
  readonly fault?: FaultPlan;
  readonly kill?: KillPlan;
  /**
   * Run the job as shard 0 of 1 (`exactly run --shard 0/1`) with a lease of this many ms:
   * an owner's lease and epoch fence every other process started on the same checkpoints
   * (docs/design.md §2, Shards). The child prints its ownership lines on stderr
   * (`waiting for shard …`, `owns shard … at epoch e`).
   */
  readonly leaseMs?: number;
  /** The zombie scenario's pause: see {@link ZombiePlan}. */
  readonly zombie?: ZombiePlan;
  /** Count the external operations of every hook call and journal them (sizes later kills). */
  readonly measure?: boolean;
}

/**
 * What the child writes down as it runs, one JSON line each, synchronously, so a SIGKILL
 * loses none of it: the test process reads it to know which ids each subtask's transaction
 * of each checkpoint holds, and what a run exercised.
 */
export type JournalEntry =
  | {
      readonly e: "open";
      readonly pid: number;
      /** The thread the subtask runs on (worker_threads' threadId; 0 for the main thread). */
      readonly thread: number;
      readonly subtask: number;
      readonly parallelism: number;
      readonly previousParallelism: number | null;
      readonly restoredCheckpointId: number | null;
      /** Old subtask indexes whose state this subtask restored. */
      readonly restoredFrom: readonly number[];
      /** Pending (pre-committed, uncommitted) work in the restored states, as the base classes record it. */
      readonly restoredPending: number;
      /** The old subtask indexes (of `restoredFrom`) whose restored state held pending work. */
      readonly pendingFrom?: readonly number[];
      /** The subtasks this one waited for to finish their open first (the run's `openOrder`). */
      readonly waitedFor?: readonly number[];
    }
  /** The subtask's open returned (or failed): its recovery commits, cleanup and first begin are done. */
  | { readonly e: "opened"; readonly pid: number; readonly subtask: number; readonly ok: boolean }
  /** The subtask's snapshot of n returned: per lane, the first and last id it wrote since its previous snapshot. */
  | {
      readonly e: "snapshot";
      readonly pid: number;
      readonly subtask: number;
      readonly checkpointId: number;
      readonly lanes: Record<string, readonly [number, number]>;
      /** When it returned (ms since the epoch): a transaction of n is at least this old afterwards. */
      readonly at: number;
    }
  | { readonly e: "complete"; readonly pid: number; readonly checkpointId: number }
  | { readonly e: "declined"; readonly pid: number; readonly checkpointId: number }
  | {
      readonly e: "notified";
      readonly pid: number;
      readonly subtask: number;
      readonly checkpointId: number;
      /**
       * Older checkpoints this subtask pre-committed whose completion it had not been told
       * of: the notification subsumed them (their transactions were still pending).
       */
      readonly older?: readonly number[];
    }
  | { readonly e: "late-notified"; readonly pid: number; readonly subtask: number; readonly checkpointId: number }
  /**
   * A call of `hook` started `ios` external operations in its own context, and the process
   * `during` of them while it was in flight (journaled for open always, else when it grows).
   */
  | { readonly e: "ios"; readonly pid: number; readonly hook: Hook; readonly ios: number; readonly during: number }
  /** The child killed itself inside `hook` before its `io`-th external operation (inside false: at the call's end). */
  | {
      readonly e: "kill";
      readonly pid: number;
      readonly hook: Hook;
      readonly io: number;
      readonly inside: boolean;
      /** The operation it died before was a synchronous client's call (node:sqlite), not an async one. */
      readonly synchronous?: boolean;
    };

/** The child's journal in a scope's directory. */
export const JOURNAL = ".conformance-journal.jsonl";

/** The checkpoint directory of a scope, where the test process reads completed positions. */
export const CHECKPOINTS = ".conformance-checkpoints";

/** The one line the child prints on stdout when it ends by itself. */
export interface ChildOutcome {
  readonly ok: boolean;
  readonly checkpoints: number;
  readonly declined: number;
  readonly errorCode?: string;
  readonly error?: string;
  /** Why the job's restart strategy gave up (JobFailedError's reason): "the failure is permanent …", "maxRestarts (0) reached". */
  readonly gaveUp?: string;
}

export const OUTCOME_PREFIX = "CONFORMANCE_OUTCOME ";
/** The line a zombie child prints right before it pauses itself, with the checkpoint id of the barrier. */
export const PAUSED_PREFIX = "CONFORMANCE_PAUSED ";
/**
 * The line a zombie child prints once its snapshot after the pause returned or failed:
 * `{"took": true}` (the sink took the work: the child dies next) or `{"took": false, "code": …}`.
 */
export const RESUMED_PREFIX = "CONFORMANCE_RESUMED ";
/** The line the child prints at each completed checkpoint, with its id. */
export const CHECKPOINT_PREFIX = "CONFORMANCE_CHECKPOINT ";

/** What the test process tells the probe, through the CONFORMANCE_PROBE variable. */
export type ProbeConfig = Pick<ChildConfig, "sinkModule" | "sinkExport" | "sinkOptions" | "scope">;

/**
 * The one line the probe prints: what the sink instance the factory built declares. Read
 * from the instance as the runtime sees it, unchecked: the test process judges it.
 */
export interface ProbedSink {
  /** The sink's class name, for messages. */
  readonly className: string;
  readonly guarantee: unknown;
  readonly capabilities: unknown;
  /** The lifecycle of the base class the sink extends; null when it extends none of them. */
  readonly baseClass: { readonly name: string; readonly lifecycle: SinkLifecycle } | null;
  /** The sink's `transactionTimeoutMs` (TwoPhaseCommitSink declares it), or null. */
  readonly transactionTimeoutMs: number | null;
}

/** The one line the probe prints: the sink's declarations, or why no sink could be built. */
export type ProbeOutcome =
  | { readonly ok: true; readonly sink: ProbedSink }
  | { readonly ok: false; readonly error: string };

export const PROBE_PREFIX = "CONFORMANCE_SINK ";
export const SINK_NAME = "conformance-sink";
export const SOURCE_ID = "source:conformance";
/** The generator's lanes: id i is in lane i mod LANES; at most this parallelism reads. */
export const LANES = 4;
