import type { ScenarioName } from "@exactly/conformance";

/**
 * Whether this run is the whole test set: `pnpm test:full` (EXACTLY_TEST=full), or the
 * conformance suite's full profile (EXACTLY_CONFORMANCE=full), which implies it.
 */
export function fullRun(): boolean {
  return process.env.EXACTLY_TEST === "full" || process.env.EXACTLY_CONFORMANCE === "full";
}

/**
 * A variant is a sink class's conformance suite run again with one thing changed that is not
 * the sink's code: a second S3 server, checkpoints on S3, larger parts, subtasks on worker
 * threads, a Redis Cluster, a transaction timeout. Every sink class runs its whole suite once
 * in `pnpm test`; a variant runs there only the scenarios that reach what it changes, listed
 * below with the reason (docs/design.md §7), and its whole suite under `pnpm test:full`.
 */
export type Variant = keyof typeof VARIANT_SCENARIOS;

const VARIANT_SCENARIOS = {
  /**
   * Subtasks on two worker threads. Every suite's own `worker-threads` scenario already kills
   * at each fault point with subtasks on two threads, recovery's own points included; these
   * add what that one does not: a commit cut between two of its operations, parallelism
   * changing 4 → 2 → 3 → 2 with every index's work pending and the order of recovery held
   * across threads, load at parallelism 4, kills at random moments and parallelisms, and a
   * paused owner (`zombie`), whose pause can catch the other thread in the middle of a write,
   * holding what it holds (a SQLite write lock, a session) until it is resumed.
   */
  threads: ["kill-inside-commit", "restore-across-owners", "volume", "chaos", "zombie"],
  /**
   * The S3 file sink on a second S3 implementation (moto), with checkpoints on S3. Servers
   * differ in how they answer a repeated or impossible `CompleteMultipartUpload` and in
   * `ListMultipartUploads`' prefix: completions a crash or a kill cut, which recovery repeats,
   * and lingering uploads found by prefix and aborted (also after a rescale leaves indexes
   * without an owner). The behaviour suite (`s3-file-sink-moto.test.ts`) runs the rest on moto.
   */
  "second-s3-server": [
    "clean-run",
    "crash-mid-commit",
    "crash-during-recovery-commit",
    "crash-during-lingering-abort",
    "kill-inside-commit",
    "rescale-down",
  ],
  /**
   * The S3 file sink with the job's checkpoints in `S3CheckpointStorage` instead of on disk:
   * the sink's code is the same, the checkpoint store is what changes, so the scenarios where
   * what a checkpoint holds decides the outcome: the final checkpoint of a stop, a crash on
   * either side of a checkpoint becoming durable, recovering twice from one, a declined one,
   * and restoring at another parallelism; and the shard's lease and head, which live beside
   * the checkpoints (S3 conditional writes instead of the file system's): a zombie resumed
   * after the takeover, and two owners started at once.
   */
  "s3-checkpoints": [
    "graceful-stop",
    "crash-after-pre-commit",
    "crash-after-checkpoint-durable",
    "double-crash",
    "declined-checkpoint",
    "rescale-up",
    "zombie",
    "double-identity",
  ],
  /**
   * The S3 file sink with part files of several 5 MiB upload parts: crashes and kills that
   * land between the parts of one upload, while writing, committing and recovering, and the
   * scenarios with enough records to make such part files (the test file checks that some did).
   */
  "multipart-parts": [
    "crash-mid-write",
    "crash-mid-commit",
    "crash-during-recovery-commit",
    "kill-inside-commit",
    "batch-sizes",
    "volume",
  ],
  /**
   * A Redis sink on a Cluster of three masters: the same commands, each call's keys in one
   * slot and the calls of a flush spread over the masters, so what differs is a flush or a
   * recovery cut between masters, lingering keys looked for on every master, and keys moving
   * between subtasks on a rescale. Scenarios an upsert sink cannot run are reported skipped.
   */
  "redis-cluster": [
    "clean-run",
    "crash-mid-write",
    "crash-mid-commit",
    "crash-during-recovery-commit",
    "crash-during-lingering-abort",
    "kill-inside-commit",
    "rescale-down",
    "volume",
  ],
  /**
   * The toy sink over a system that expires a transaction older than 8 s: the sink's code is
   * the same; `transaction-timeout` holds a commit past the timeout, and the two scenarios that
   * keep transactions open longest otherwise (a kill inside recovery, a declined checkpoint)
   * check that nothing else outlives it.
   */
  "transaction-timeout": ["transaction-timeout", "kill-inside-recovery", "declined-checkpoint"],
} as const satisfies Record<string, readonly ScenarioName[]>;

/**
 * The scenarios a variant runs: its list in `pnpm test`, every scenario (undefined) in a full
 * run. Pass it as the suite's `only`.
 */
export function variantScenarios(variant: Variant): readonly ScenarioName[] | undefined {
  return fullRun() ? undefined : VARIANT_SCENARIOS[variant];
}
