import { DeliveryGuarantee } from "@exactly/core";
import { FAULT_POINTS, type FaultPoint } from "@exactly/core/faults";
import { seededRandom } from "@exactly/core/internal";
import type { SinkDeclarations } from "./declarations.ts";
import type { ScenarioName, SinkLifecycle } from "./definition.ts";
import type { ChildConfig, FaultPlan, Hook, KillPlan, OpenOrder } from "./harness/child-protocol.ts";
import type { Exercised } from "./harness/journal.ts";

/** One run of the job inside a scenario, before the final run that must finish. */
export interface RunPlan {
  /** A named fault point, armed after some completed checkpoints: the run must die there by SIGKILL. */
  readonly fault?: FaultPlan;
  /**
   * A kill inside a sink call, before the external operation at `share` (0 ≤ share < 1) of
   * the call's length, as earlier runs measured it: the run must die there.
   */
  readonly kill?: Omit<KillPlan, "io" | "count"> & {
    readonly share: number;
    /**
     * Hooks the kill may move to, in order after `hook`, when earlier runs measured that
     * `hook`'s calls start no external operation (a sink that only buffers in `writeBatch`):
     * a kill there could never land inside.
     */
    readonly among?: readonly Hook[];
  };
  /**
   * Expands into one run per external operation of the hook's call (as earlier runs
   * measured it, at most the profile's `sweep`, sampled evenly above): each run is killed
   * right before one of them, so every window between two of the sink's calls is hit.
   */
  readonly sweep?: Omit<KillPlan, "io" | "count"> & {
    /**
     * A run made after each kill of the sweep: it recovers in full and leaves pending work
     * again, so no transaction stays pending across the whole sweep (a system with a
     * transaction timeout would expire it).
     */
    readonly between?: RunPlan;
  };
  /** Stop gracefully (SIGTERM) after this many completed checkpoints; the run must exit cleanly. */
  readonly stopAfterCheckpoints?: number;
  readonly parallelism?: number;
  readonly config?: Partial<ChildConfig>;
  /** Chaos runs may finish before their kill; others must not. */
  readonly mayFinish?: boolean;
}

/** What a scenario must have exercised to count: otherwise it tested nothing and is retried. */
export type Requirement =
  | keyof Pick<
      Exercised,
      | "restoredState"
      | "pendingRestored"
      | "acrossIndexes"
      | "merged"
      | "declinedAfterPreCommit"
      | "lateNotification"
      | "onThreads"
      | "pendingAcrossOwners"
      | "cleanupBeforeCommits"
      | "commitsBeforeCleanup"
      | "subsumedCompletion"
      | "declinedThenCompleted"
    >
  | `killedInside:${Hook}`
  | "killedInside:any";

export interface ScenarioPlan {
  readonly name: ScenarioName;
  readonly description: string;
  /** The defect class the scenario exists to catch (docs/conformance.md). */
  readonly catches: string;
  readonly runs: readonly RunPlan[];
  /** Parallelism and settings of the final run. */
  readonly final?: { readonly parallelism?: number; readonly config?: Partial<ChildConfig> };
  /** Records of the scenario, when not the profile's. */
  readonly records?: number;
  /** The final run may fail loudly instead of finishing (transaction timeout). */
  readonly loudFailureAllowed?: readonly string[];
  readonly requires?: readonly Requirement[];
  /**
   * The job runs as shard 0 of 1 with a short lease in several processes at once
   * (shard-scenarios.ts): a paused owner and its successor, or two owners started together.
   * `runs` is empty: the scenario drives its processes itself.
   */
  readonly shards?: "zombie" | "double-identity";
}

/** "soak": the full profile, with many kills per chaos scenario (`pnpm soak` runs it in rounds). */
export type Profile = "ci" | "full" | "soak";

export interface ProfileSettings {
  readonly records: number;
  /** Records per second of the final run. */
  readonly ratePerSecond: number;
  /**
   * Records per second of the runs that must die: slower, so each uses up a small part of
   * the stream and a scenario's several crash runs all find records left to crash in.
   */
  readonly crashRatePerSecond: number;
  /** Records of the volume and batch-size scenarios, written as fast as the sink takes them. */
  readonly volumeRecords: number;
  /** The batch sizes of the batch-size sweep; the last is the final run's. */
  readonly batchSizes: readonly number[];
  readonly chaosKills: number;
  /** Kills of the random-kill scenario. */
  readonly randomKills: number;
  /** Most kills of a sweep over a call's external operations. */
  readonly sweep: number;
  /** Longest the transaction-timeout scenario holds a commit; a longer timeout is not tested. */
  readonly maxHoldMs: number;
  /** Attempts of a scenario that tested nothing (a run that should have died but finished …) before it is inconclusive. */
  readonly attempts: number;
}

export const PROFILES: Record<Profile, ProfileSettings> = {
  ci: {
    records: 4000,
    ratePerSecond: 4000,
    crashRatePerSecond: 1500,
    volumeRecords: 50_000,
    batchSizes: [1, 7, 4096],
    chaosKills: 3,
    randomKills: 3,
    sweep: 16,
    maxHoldMs: 30_000,
    attempts: 3,
  },
  full: {
    records: 100_000,
    ratePerSecond: 25_000,
    crashRatePerSecond: 8000,
    volumeRecords: 250_000,
    batchSizes: [1, 7, 64, 4096],
    chaosKills: 10,
    randomKills: 8,
    sweep: 48,
    maxHoldMs: 120_000,
    attempts: 3,
  },
  soak: {
    records: 100_000,
    ratePerSecond: 25_000,
    crashRatePerSecond: 8000,
    volumeRecords: 250_000,
    batchSizes: [1, 7, 64, 4096],
    chaosKills: 50,
    randomKills: 8,
    sweep: 48,
    maxHoldMs: 120_000,
    attempts: 3,
  },
};

/** How long each completion notification is held in crash runs, so pre-committed work is outstanding at the kill. */
const HOLD_COMMITS_MS = 250;
/** Checkpoints completed before a crash run arms its fault point. */
const SETTLED = 3;

/** The fault points a sink of this lifecycle passes through. */
export function faultPointsOf(sink: { readonly lifecycle: SinkLifecycle }): readonly FaultPoint[] {
  if (sink.lifecycle === "idempotent" || sink.lifecycle === "flush") {
    return ["mid-write", "after-pre-commit", "after-checkpoint-durable"];
  }
  return FAULT_POINTS;
}

/** The hooks a sink of this lifecycle does external work in: where random kills land. */
function busyHooks(lifecycle: SinkLifecycle): readonly Hook[] {
  if (lifecycle === "idempotent" || lifecycle === "flush") return ["writeBatch", "snapshotState"];
  return ["open", "writeBatch", "snapshotState", "notifyCheckpointComplete"];
}

const article = (word: string) => (/^[aeiou]/.test(word) ? "an" : "a");

/** A crash run: the fault point fires once `after` checkpoints completed, with commits held so work is pending. */
function crashRun(point: FaultPoint, options: { at?: number; after?: number; parallelism?: number } = {}): RunPlan {
  return {
    fault: { spec: `${point}@${options.at ?? 1}`, afterCheckpoints: options.after ?? SETTLED },
    config: { holdCommitsMs: HOLD_COMMITS_MS },
    ...(options.parallelism ? { parallelism: options.parallelism } : {}),
  };
}

/**
 * A crash at parallelism p that leaves work under every index but 0 for recovery to clean
 * up: subtask 0 is slow at each barrier, so the others are writing into a transaction
 * begun after a checkpoint that never completes when the SIGKILL comes.
 */
function lingeringRun(parallelism: number): RunPlan {
  return {
    config: { holdCommitsMs: HOLD_COMMITS_MS, slowSnapshotMs: 300, killInSlowSnapshotAfter: 2 },
    parallelism,
  };
}

/** A run that dies at a point of recovery, armed from the start. */
function recoveryRun(point: FaultPoint, at = 1): RunPlan {
  return { fault: { spec: `${point}@${at}`, afterCheckpoints: 0 } };
}

/** The run with its subtasks opening in the given order after a restore (see {@link OpenOrder}). */
function inOrder(run: RunPlan, openOrder: OpenOrder): RunPlan {
  return { ...run, config: { ...run.config, openOrder } };
}

/** Both orders, alternating along a scenario's runs, so each scenario meets both. */
const alternating = (index: number): OpenOrder => (index % 2 === 0 ? "cleanup-first" : "commits-first");

/** A run at parallelism 2 with its subtasks on two worker threads (subtask i on worker i mod 2). */
function onThreads(run: RunPlan): RunPlan {
  return { ...run, parallelism: 2, config: { ...run.config, workers: 2 } };
}

/**
 * Every scenario, with why it does not apply to a sink (undefined when it does), from the
 * sink's own declarations. Crashes come after several completed checkpoints, with commits
 * held so that pre-committed work is outstanding when the process dies.
 */
export function planScenarios(
  sink: SinkDeclarations,
  profile: ProfileSettings,
  seed: number,
): Array<{ plan: ScenarioPlan; notApplicable?: string }> {
  const points = new Set(faultPointsOf(sink));
  const needs = (point: FaultPoint) =>
    points.has(point)
      ? undefined
      : `${article(sink.lifecycle)} ${sink.lifecycle} sink never reaches the ${point} fault point`;
  const canRescale = sink.capabilities.rescale === true;
  const unfenced =
    sink.capabilities.fences === true
      ? undefined
      : "the sink does not declare capabilities.fences: not safe to run sharded, and exactly run --shard refuses it (docs/writing-a-sink.md, Fencing)";
  const rescale = canRescale ? undefined : "the sink does not declare capabilities.rescale";
  // The two-phase and write-ahead bases record pending work in their state; the suite sees it
  // only there (an idempotent or flushing sink has none).
  const pending: Requirement[] =
    sink.lifecycleFrom === "base class" && (sink.lifecycle === "two-phase-commit" || sink.lifecycle === "write-ahead")
      ? ["pendingRestored"]
      : [];
  const committing = sink.lifecycle === "two-phase-commit" || sink.lifecycle === "write-ahead";
  const commitsNothing = committing
    ? undefined
    : `${article(sink.lifecycle)} ${sink.lifecycle} sink does its work at the barrier: completion and recovery have nothing to kill inside`;
  const crash = (
    name: ScenarioName,
    description: string,
    catches: string,
    runs: RunPlan[],
    requires: Requirement[] = ["restoredState"],
  ) => ({
    plan: { name, description, catches, runs, requires },
    notApplicable: runs
      .map((r) => (r.fault ? needs(r.fault.spec.split("@")[0] as FaultPoint) : undefined))
      .find((reason) => reason !== undefined),
  });
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)] as T;
  const hooks = busyHooks(sink.lifecycle);
  // A recovery may end before its planned turn (a kill before it left less to do): the run may finish.
  const randomKill = (hook: Hook): RunPlan =>
    hook === "open"
      ? { kill: { hook, afterCheckpoints: 0, share: random(), among: hooks } }
      : { kill: { hook, afterCheckpoints: 1 + Math.floor(random() * 3), share: random(), among: hooks } };

  const chaosPoints = [...points].filter((p) => p !== "during-recovery-commit" && p !== "during-lingering-abort");
  const chaosRuns: RunPlan[] = Array.from({ length: profile.chaosKills }, (_, index) => {
    const parallelism = canRescale ? { parallelism: 1 + Math.floor(random() * 4) } : {};
    if (random() < 0.4)
      return inOrder({ ...randomKill(pick(hooks)), mayFinish: true, ...parallelism }, alternating(index));
    return inOrder(
      {
        ...crashRun(pick(chaosPoints), { at: 1 + Math.floor(random() * 3), after: 1 + Math.floor(random() * 4) }),
        mayFinish: true,
        ...parallelism,
      },
      alternating(index),
    );
  });
  // Only sinks with transactions leave work for lingering cleanup behind a crash.
  const leavesWork = (parallelism: number) =>
    committing ? lingeringRun(parallelism) : crashRun("mid-write", { parallelism, at: 4 * parallelism, after: 2 });
  const timeout = sink.transactionTimeoutMs;
  const hold = Math.ceil((timeout ?? 0) * 1.5) + 200;
  const sizes = profile.batchSizes;

  return [
    {
      plan: {
        name: "clean-run",
        description: "one run at parallelism 4, no faults",
        catches: "writes outside the transaction, lost or phantom records without any crash",
        runs: [],
        final: { parallelism: 4 },
      },
    },
    {
      plan: {
        name: "graceful-stop",
        description: "SIGTERM after 3 checkpoints: final checkpoint, commit, exit; then restart to the end",
        catches: "a stop that leaves read records uncommitted, or aborts pending work",
        runs: [{ stopAfterCheckpoints: 3 }],
      },
    },
    crash(
      "crash-after-begin",
      "SIGKILL right after a transaction was begun, 3 checkpoints in, commits pending",
      "a new transaction that recovery neither finds nor aborts",
      [crashRun("after-begin")],
    ),
    crash(
      "crash-mid-write",
      "SIGKILL between two written batches, 3 checkpoints in, commits pending",
      "writes of the open transaction that survive the crash",
      [crashRun("mid-write", { at: 3 })],
    ),
    crash(
      "crash-after-pre-commit",
      "SIGKILL after pre-commit, before the checkpoint is acknowledged",
      "publishing at the barrier; pre-committed work of a checkpoint that never completed",
      [crashRun("after-pre-commit")],
    ),
    crash(
      "crash-after-checkpoint-durable",
      "SIGKILL after the checkpoint is durable, before any commit: recovery must commit it",
      "recovery that does not commit what another process pre-committed (I2)",
      [crashRun("after-checkpoint-durable")],
      ["restoredState", ...pending],
    ),
    crash(
      "crash-mid-commit",
      "SIGKILL inside or right after a commit: recovery commits again (I5)",
      "a commit that is not idempotent (I5)",
      [crashRun("mid-commit")],
      ["restoredState", ...pending],
    ),
    crash(
      "crash-during-recovery-commit",
      "SIGKILL while recovery commits restored transactions",
      "recovery that cannot be repeated after a crash of its own",
      [crashRun("after-checkpoint-durable"), recoveryRun("during-recovery-commit")],
      ["restoredState", ...pending],
    ),
    crash(
      "crash-during-lingering-abort",
      "SIGKILL while recovery aborts lingering work",
      "lingering-work cleanup that cannot be repeated",
      [crashRun("after-pre-commit", { at: 2 }), recoveryRun("during-lingering-abort")],
    ),
    crash(
      "double-crash",
      "SIGKILL, then SIGKILL again one checkpoint after the restart",
      "recovery state that a second crash loses",
      [crashRun("after-pre-commit"), crashRun("mid-write", { after: 1 })],
    ),
    crash(
      "crash-during-replay",
      "SIGKILL after pre-commit, then SIGKILL again at the first pre-commit of the replay (30 ms checkpoints)",
      "a replay that moves keys back or stores a record with a new version (idempotent sinks)",
      [
        crashRun("after-pre-commit"),
        { fault: { spec: "after-pre-commit@1", afterCheckpoints: 0 }, config: { checkpointIntervalMs: 30 } },
      ],
    ),
    {
      plan: {
        name: "kill-inside-commit",
        description: "a SIGKILL before each external operation of the sink's commit in turn, one run each",
        catches: "a commit in several steps that a crash between them breaks (data, then a marker)",
        records: profile.volumeRecords,
        runs: [
          // Measures the commit's operations (they size the sweep); commits are not held, so some are made.
          { fault: { spec: "after-checkpoint-durable@1", afterCheckpoints: 3 }, config: { measure: true } },
          { sweep: { hook: "notifyCheckpointComplete", afterCheckpoints: 1 } },
        ],
        final: { config: { ratePerSecond: undefined } },
        requires: ["killedInside:notifyCheckpointComplete"],
      },
      notApplicable: commitsNothing,
    },
    {
      plan: {
        name: "kill-inside-recovery",
        description: "a SIGKILL before each external operation of recovery (open) in turn, with pending work",
        catches: "recovery in several steps that a crash between them breaks",
        records: profile.volumeRecords,
        runs: [
          crashRun("after-checkpoint-durable"),
          // Recovers once in full (its operations size the sweep), then leaves pending work again.
          {
            ...crashRun("after-checkpoint-durable", { after: 2 }),
            config: { holdCommitsMs: HOLD_COMMITS_MS, measure: true },
          },
          {
            sweep: {
              hook: "open",
              afterCheckpoints: 0,
              between: crashRun("after-checkpoint-durable", { after: 2 }),
            },
          },
        ],
        final: { config: { ratePerSecond: undefined } },
        requires: ["killedInside:open", ...pending],
      },
      notApplicable: commitsNothing,
    },
    {
      plan: {
        name: "random-kills",
        description: `${profile.randomKills} SIGKILLs at seeded moments inside sink calls (seed ${seed})`,
        catches: "crash windows between two external calls that no named fault point marks",
        runs: [
          // Measures every hook's calls, so each kill is sized to the calls it lands in.
          { ...crashRun("after-checkpoint-durable"), config: { holdCommitsMs: HOLD_COMMITS_MS, measure: true } },
          ...Array.from({ length: profile.randomKills }, () => randomKill(pick(hooks))),
        ],
        requires: ["killedInside:any"],
      },
    },
    {
      plan: {
        name: "rescale-up",
        description: "crash at parallelism 1, then at 4 with work pending, finish at 3",
        catches: "restored state of another subtask index not committed, or work of a vanished index left",
        records: 2 * profile.records,
        // 1 → 4: the new subtasks open before subtask 0 recovers; 4 → 3: subtask 0 first.
        runs: [crashRun("after-pre-commit", { parallelism: 1 }), inOrder(leavesWork(4), "commits-first")],
        final: { parallelism: 3, config: { openOrder: "cleanup-first" } },
        requires: ["acrossIndexes", ...pending],
      },
      notApplicable: rescale,
    },
    {
      plan: {
        name: "rescale-down",
        description: "crash at parallelism 4, then at 2 with work pending, finish at 1",
        catches: "restored states of several old subtasks merged wrongly, or their lingering work left",
        records: 2 * profile.records,
        // 4 → 2 with subtask 1's recovery commits and new transaction before subtask 0's
        // cleanup: restore-across-owners runs 4 → 2 the other way round.
        runs: [
          leavesWork(4),
          inOrder(crashRun("after-checkpoint-durable", { parallelism: 2, after: 2 }), "commits-first"),
        ],
        final: { parallelism: 1 },
        requires: [
          "merged",
          "acrossIndexes",
          ...pending,
          ...(pending.length > 0 ? ["commitsBeforeCleanup" as const] : []),
        ],
      },
      notApplicable: rescale,
    },
    {
      plan: {
        name: "restore-across-owners",
        description:
          "every index pre-committed when killed at parallelism 4, then 4 → 2 (subtask 0 cleans up first; rescale-down runs 4 → 2 the other way round), 2 → 3 and 3 → 2 (the other subtasks recover and begin first)",
        catches:
          "lingering cleanup that aborts pre-committed work another subtask restored (referenced spared only in part, or not at all), or that aborts another subtask's new transaction",
        records: 2 * profile.records,
        runs: [
          crashRun("after-checkpoint-durable", { parallelism: 4, after: 2 }),
          inOrder(crashRun("after-checkpoint-durable", { parallelism: 2, after: 2 }), "cleanup-first"),
          inOrder(crashRun("after-checkpoint-durable", { parallelism: 3, after: 2 }), "commits-first"),
        ],
        final: { parallelism: 2, config: { openOrder: "commits-first" } },
        requires:
          pending.length > 0
            ? ["pendingAcrossOwners", "cleanupBeforeCommits", "commitsBeforeCleanup"]
            : ["acrossIndexes"],
      },
      notApplicable: rescale,
    },
    {
      plan: {
        name: "duplicate-notifications",
        description: "every completion notification arrives twice",
        catches: "a commit that is not idempotent (I5)",
        runs: [],
        final: { config: { notifications: "duplicate" } },
      },
    },
    {
      plan: {
        name: "late-notifications",
        description:
          "each odd checkpoint's completion reaches the sink after the next one's, which finds its transaction still pending; every notification is repeated for the two before it",
        catches:
          "a completion that commits only its own checkpoint's transaction and forgets older pending ones, or a late notification that commits or drops the wrong work",
        // Twice the records at the crash rate: the run must span several checkpoints even where
        // each takes a second (a sink writing a file a key, on a loaded machine), or no
        // completion ever finds an older one pending and the scenario tests nothing.
        records: 2 * profile.records,
        runs: [],
        final: { config: { notifications: "late", ratePerSecond: profile.crashRatePerSecond } },
        requires: ["subsumedCompletion"],
      },
    },
    {
      plan: {
        name: "notification-after-next-barrier",
        description: "complete(n) reaches the sink after it pre-committed n+1; SIGKILL before n+1 completes",
        catches: "a sink that commits beyond the checkpoint it is told completed",
        runs: [{ config: { notifications: "after-next-barrier", killAfterLateNotification: 3 } }],
        requires: ["lateNotification"],
      },
      notApplicable: commitsNothing,
    },
    {
      plan: {
        name: "declined-checkpoint",
        description:
          "checkpoint 4 is declined after the sink pre-committed it (another task outlasts the 1.5 s timeout), the next completion finds it pending; SIGKILL when the third after it is durable",
        catches:
          "a sink that discards pre-committed work when its checkpoint is declined, or whose next completion commits only its own checkpoint's transaction",
        // Enough records that checkpoints go on after subtask 0's 3 s wait.
        records: 2 * profile.records,
        runs: [
          {
            // 5 completes and reaches the sink with 4 pending; the kill comes two checkpoints later,
            // so the restored state is one taken after that completion.
            fault: { spec: "after-checkpoint-durable@3", afterCheckpoints: 3 },
            // Long enough for a slow sink's own checkpoints under load; subtask 0 waits twice it at 4.
            config: { declineCheckpoint: 4, checkpointTimeoutMs: 1500 },
          },
        ],
        requires: ["declinedAfterPreCommit", "declinedThenCompleted"],
      },
    },
    {
      plan: {
        name: "transaction-timeout",
        description: "commits are held past the transaction timeout: fail loudly or stay exactly once",
        catches: "a transaction the system expired, lost silently",
        runs: [],
        final: { config: { holdCommitsMs: hold } },
        loudFailureAllowed: ["TRANSACTION_LOST", "CONFIGURATION"],
      },
      notApplicable:
        timeout === undefined
          ? "the sink's external system has no transaction timeout (transactionTimeoutMs)"
          : sink.guarantee !== DeliveryGuarantee.EXACTLY_ONCE
            ? "only exactly-once sinks hold transactions"
            : hold > profile.maxHoldMs
              ? `holding a commit past the transaction timeout (${timeout} ms) takes longer than this profile holds one (${profile.maxHoldMs} ms)`
              : undefined,
    },
    {
      plan: {
        name: "batch-sizes",
        description: `crashes at batch sizes ${sizes.slice(0, -1).join(", ")}, then to the end in batches of ${sizes.at(-1)} as fast as the sink takes them`,
        catches: "records dropped past some batch size, or lost in single-record batches",
        records: profile.volumeRecords,
        runs: sizes.slice(0, -1).map((batchSize) => {
          const run = crashRun("after-pre-commit", { after: 2 });
          return { ...run, config: { ...run.config, batchSize } };
        }),
        final: { config: { batchSize: sizes.at(-1) as number, ratePerSecond: undefined } },
      },
    },
    {
      plan: {
        name: "volume",
        description: `${profile.volumeRecords.toLocaleString("en")} records at parallelism 4, as fast as the sink takes them`,
        catches: "records dropped once in many thousands",
        records: profile.volumeRecords,
        runs: [],
        final: { parallelism: 4, config: { ratePerSecond: undefined, batchSize: 1024 } },
      },
    },
    {
      plan: {
        name: "worker-threads",
        description:
          "on two worker threads at parallelism 2: a SIGKILL at each fault point the sink passes, recovery's own after the crash that leaves it work, then to the end on two threads",
        catches:
          "a sink that shares clients or state through module globals, or that breaks when its subtasks run on different threads",
        records: 2 * profile.records,
        runs: (
          [
            ["after-begin"],
            ["mid-write", 3],
            ["after-pre-commit"],
            ["mid-commit"],
            ["after-checkpoint-durable"],
            ["during-recovery-commit"],
            ["after-pre-commit", 2],
            ["during-lingering-abort"],
          ] as Array<[FaultPoint, number?]>
        )
          .filter(([point]) => points.has(point))
          .map(([point, at], index) =>
            inOrder(
              onThreads(
                point === "during-recovery-commit" || point === "during-lingering-abort"
                  ? recoveryRun(point)
                  : crashRun(point, at === undefined ? {} : { at }),
              ),
              alternating(index),
            ),
          ),
        final: { parallelism: 2, config: { workers: 2 } },
        requires: ["onThreads", "restoredState", ...pending],
      },
    },
    {
      plan: {
        name: "zombie",
        description:
          "the job as shard 0 of 1 (2 s lease): its owner is paused (SIGSTOP) at a barrier with records in its open transaction, a successor takes the shard and commits, then the owner is resumed (SIGCONT)",
        catches:
          "a sink that skips its fence (I9): a zombie's pre-commit, begin or late commit after the takeover that is taken, becomes visible or lingers",
        runs: [],
        shards: "zombie",
        requires: ["restoredState"],
      },
      notApplicable: unfenced,
    },
    {
      plan: {
        name: "double-identity",
        description:
          "two processes started at once as the same shard: one owns it and finishes the input while the other waits, then the other takes it over and finds nothing left",
        catches: "two owners of one shard writing at once; a standby that writes, or a takeover that repeats work",
        runs: [],
        shards: "double-identity",
      },
      notApplicable: unfenced,
    },
    {
      plan: {
        name: "chaos",
        description: `${profile.chaosKills} SIGKILLs at random fault points and moments${canRescale ? " and parallelisms" : ""} (seed ${seed})`,
        catches: "anything the named scenarios miss",
        runs: chaosRuns,
      },
    },
  ];
}
