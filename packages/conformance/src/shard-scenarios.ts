/**
 * The two scenarios of a sharded job (docs/design.md §2, Shards; I9), which run several
 * child processes at once as shard 0 of 1 with a short lease, on the same checkpoints:
 *  - zombie: the owner pauses itself (SIGSTOP) at a barrier holding records in its open
 *    transaction; a successor takes the shard past the lease, recovers and commits; the
 *    owner is resumed (SIGCONT), or sooner, when the successor owns the shard but commits
 *    nothing for a while (it may wait on a lock the paused process holds). Its snapshot after the takeover (pre-commit, the next begin)
 *    must be refused with SHARD_FENCED (or the lost lease fail it first); whatever of it the
 *    sink took is left in place (the child dies at once) for the checks to find;
 *  - double-identity: two processes started together; one owns the shard and finishes the
 *    input while the other waits, then takes the shard and finds nothing left.
 * Both end with the checks every scenario has, after a final run (in double-identity, the
 * standby's takeover is that run).
 */
import type { ShardSpec } from "@exactly/core";
import type { ConformanceDefinition, ScenarioScope } from "./definition.ts";
import { type Attempt, checkFinalRun, describeExit, type FinalChecks, finalRunAndCheck } from "./final-checks.ts";
import { type ChildConfig, PAUSED_PREFIX, RESUMED_PREFIX } from "./harness/child-protocol.ts";
import { readJournal } from "./harness/journal.ts";
import { type ChildRun, type RunningChild, type RunOptions, startChild } from "./harness/run-child.ts";
import type { ProfileSettings } from "./scenarios.ts";

/** The shard every process of these scenarios runs: the whole job, but owned under a lease. */
export const SCENARIO_SHARD: ShardSpec = { index: 0, count: 1 };
/** The lease: short, so a successor takes over a paused owner within seconds. */
export const SHARD_LEASE_MS = 2000;
/** Checkpoints the owner completes before it pauses, so pending work and restored state stand behind it. */
const ZOMBIE_AFTER = 3;
/** How long completion notifications are held in the owner, so committed-late work is outstanding at the pause. */
const HOLD_COMMITS_MS = 250;
/**
 * The most any one step of these scenarios waits (the owner's pause, a successor's takeover
 * and first commit, a process's end); what each step's running out means is the step's to say.
 */
const STEP_LIMIT_MS = 30_000;
/**
 * How long a successor that owns the shard may go without a commit while the old owner is
 * paused before the old owner is resumed anyway: the successor may be waiting on a lock the
 * paused process holds (SQLite's write lock, held by a worker thread paused in the middle of
 * a transaction), which nothing but that process's resumption releases, in production too.
 */
const LOCK_WAIT_MS = 5000;
/** The errors that say a process lost its shard (`@exactly/core`'s ShardFencedError and ShardLeaseLostError). */
const LOST_SHARD = ["SHARD_FENCED", "SHARD_LEASE_LOST"];

/** What run-scenario.ts hands a shard scenario. */
export interface ShardKit {
  /** The scenario job's settings, sharded (`leaseMs`). */
  readonly base: ChildConfig;
  readonly profile: ProfileSettings;
  readonly poll: RunOptions;
  readonly records: number;
  readonly scope: ScenarioScope;
  readonly definition: ConformanceDefinition;
  readonly checks: FinalChecks;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The reader's polls of several children running at once, one at a time: the observer
 * compares each poll with the one before, so two reads in flight together could look like a
 * key moving back.
 */
function oneAtATime(options: RunOptions): RunOptions {
  const poll = options.poll;
  if (!poll) return options;
  let last: Promise<unknown> = Promise.resolve();
  return {
    ...options,
    poll: () => {
      last = last.then(
        () => poll(),
        () => poll(),
      );
      return last;
    },
  };
}

/** Waits until `done` holds; false when a step limit passed first (the attempt then tested nothing). */
async function until(done: () => boolean | Promise<boolean>): Promise<boolean> {
  const limit = Date.now() + STEP_LIMIT_MS;
  while (!(await done())) {
    if (Date.now() > limit) return false;
    await sleep(50);
  }
  return true;
}

/** Watches a child's end without waiting for it. */
function watch(child: RunningChild): { run: ChildRun | undefined } {
  const state: { run: ChildRun | undefined } = { run: undefined };
  child.ended.then((run) => {
    state.run = run;
  });
  return state;
}

/** The epoch a child said it owns the shard at, or undefined before it does. */
function ownedEpoch(child: RunningChild): number | undefined {
  const match = /owns shard 0 of 1 at epoch (\d+)/.exec(child.stderr());
  return match ? Number(match[1]) : undefined;
}

/** Whether the child's sink was told of a completion (its commit ran) in this process. */
async function committed(scope: ScenarioScope, pid: number): Promise<boolean> {
  return (await readJournal(scope)).some((e) => e.e === "notified" && e.pid === pid);
}

/** The lingering probe between the runs: what the zombie or a standby left while another process owned the shard. */
async function lingeringNow(definition: ConformanceDefinition, scope: ScenarioScope): Promise<readonly string[]> {
  return (await definition.probeLingering?.(scope)) ?? [];
}

function sample(items: readonly string[]): string {
  return `${items.slice(0, 5).join(", ")}${items.length > 5 ? ` … (${items.length} in all)` : ""}`;
}

/** What a shard scenario does to its processes, for the report's `faults`. */
export function describeShardScenario(kind: "zombie" | "double-identity"): string[] {
  return kind === "zombie"
    ? [
        `SIGSTOP at a barrier after ${ZOMBIE_AFTER} checkpoints, with records in the open transaction`,
        "successor started; SIGCONT once it committed",
      ]
    : ["two processes started at once as shard 0 of 1"];
}

export async function attemptZombie(kit: ShardKit): Promise<Attempt> {
  const { base, profile, scope, definition, checks } = kit;
  const poll = oneAtATime(kit.poll);
  const { failures, notes } = checks;
  const owner = startChild(
    {
      ...base,
      ratePerSecond: profile.crashRatePerSecond,
      holdCommitsMs: HOLD_COMMITS_MS,
      zombie: { afterCheckpoints: ZOMBIE_AFTER },
    },
    poll,
  );
  const ownerEnd = watch(owner);
  let successor: RunningChild | undefined;
  try {
    // 1. The owner pauses at a barrier with records in its open transaction.
    const pausedOrEnded = await until(() => owner.stdout().includes(PAUSED_PREFIX) || ownerEnd.run !== undefined);
    if (!pausedOrEnded) return { kind: "inconclusive", reason: "the owner neither paused nor ended" };
    if (!owner.stdout().includes(PAUSED_PREFIX)) {
      const run = await owner.ended;
      if (run.code === 0) return { kind: "inconclusive", reason: "the owner finished the input before it paused" };
      failures.push(`the owner should have paused at a barrier but ${describeExit(run)}`);
      return { kind: "tested", failures, notes };
    }
    const pausedAt = Number(owner.stdout().split(PAUSED_PREFIX)[1]?.split("\n")[0]);
    const before = owner.checkpoints();

    // 2. A successor takes the shard once the lease ran out, recovers, and commits a checkpoint.
    const next = startChild({ ...base }, poll);
    successor = next;
    const nextEnd = watch(next);
    let ownedSince: number | undefined;
    let resumedEarly = false;
    const tookOver = await until(async () => {
      if (nextEnd.run !== undefined) return true;
      if ((ownedEpoch(next) ?? 0) < 2) return false;
      if (next.checkpoints() > 0 && (await committed(scope, next.pid))) return true;
      ownedSince ??= Date.now();
      if (!resumedEarly && Date.now() - ownedSince > LOCK_WAIT_MS) {
        // A store's lock it can wait for: resume the paused owner, whose next write the fence refuses.
        owner.signal("SIGCONT");
        resumedEarly = true;
        notes.push(
          `the successor owned the shard but committed nothing in ${LOCK_WAIT_MS / 1000} s while the old owner was paused (a lock the paused process held?): the old owner was resumed then`,
        );
      }
      return false;
    });
    if (!tookOver) {
      const epoch = ownedEpoch(next);
      if (epoch === undefined || epoch < 2)
        return { kind: "inconclusive", reason: "the successor did not take the shard from the paused owner" };
      // It owns the shard and the old owner was resumed, yet it commits nothing: the sink waits
      // on something the old owner keeps (a session, a lock it never releases).
      failures.push(
        `the successor took the shard at epoch ${epoch} but committed nothing within ${STEP_LIMIT_MS / 1000} s, though the old owner was resumed after ${LOCK_WAIT_MS / 1000} s`,
      );
      return { kind: "tested", failures, notes };
    }
    if (nextEnd.run && !(await committed(scope, next.pid))) {
      failures.push(
        `the successor should have taken the shard from the paused owner and committed, but ${describeExit(nextEnd.run)}`,
      );
      return { kind: "tested", failures, notes };
    }

    // 3. The zombie is resumed: its snapshot of the barrier it paused at is its first write after the takeover.
    owner.signal("SIGCONT");
    // A process that lost its shard fails its attempt at once (docs/design.md §2, Shards).
    if (!(await until(() => ownerEnd.run !== undefined))) {
      failures.push("the zombie neither failed its attempt nor ended after it was resumed");
      return { kind: "tested", failures, notes };
    }
    const zombie = await owner.ended;
    const after = owner.stdout().split(PAUSED_PREFIX)[1] ?? "";
    const resumed = after.split(RESUMED_PREFIX)[1]?.split("\n")[0];
    const came = resumed ? (JSON.parse(resumed) as { took: boolean; code?: string }) : undefined;
    if (came?.took) {
      notes.push(
        `the zombie's sink took its snapshot of checkpoint ${pausedAt} after the takeover (no fence refused it); the zombie was killed there, its work left for the checks`,
      );
    } else if (zombie.code === 0) {
      failures.push("the zombie finished its job after a successor had taken its shard");
    } else {
      // Refused: the attempt fails, and a transient failure (the child's restart strategy allows
      // none) would have the process wait for its shard again, a standby (I9).
      const job = zombie.outcome?.errorCode;
      const sink = came?.code;
      const error = zombie.outcome?.error ?? describeExit(zombie);
      if (zombie.outcome === undefined || zombie.outcome.gaveUp?.includes("permanent")) {
        failures.push(
          `the zombie should fail its attempt with a failure it restarts from (SHARD_FENCED, SHARD_LEASE_LOST), to wait for its shard again, but ${describeExit(zombie)}`,
        );
      } else if (sink !== undefined && LOST_SHARD.includes(sink)) {
        notes.push(`the zombie's snapshot of checkpoint ${pausedAt} after the takeover was refused (${sink})`);
      } else if (came) {
        notes.push(
          `the zombie's snapshot of checkpoint ${pausedAt} after the takeover failed, with ${sink ?? "an error without a code"} rather than ShardFencedError; the zombie's attempt failed with ${job ?? error}`,
        );
      } else {
        notes.push(`the zombie's attempt failed with ${job ?? error} before its snapshot came back`);
      }
    }
    if (owner.checkpoints() > before) {
      failures.push(`the zombie completed ${owner.checkpoints() - before} checkpoints after the takeover`);
    }

    // 4. The successor finishes the input; nothing of the zombie may linger meanwhile.
    if (!(await until(() => nextEnd.run !== undefined))) {
      failures.push("the successor did not finish the input");
      return { kind: "tested", failures, notes };
    }
    const done = await next.ended;
    if (done.code !== 0) {
      failures.push(`the successor should finish the input but ${describeExit(done)}`);
      return { kind: "tested", failures, notes };
    }
    const left = await lingeringNow(definition, scope);
    if (left.length > 0) {
      failures.push(
        `${left.length} lingering after the successor's recovery, left by the zombie after the takeover (I4, I9): ${sample(left)}`,
      );
    }
  } finally {
    owner.signal("SIGKILL");
    successor?.signal("SIGKILL");
  }
  return finalRunAndCheck(checks, base, 0);
}

export async function attemptDoubleIdentity(kit: ShardKit): Promise<Attempt> {
  const { base, profile, scope, checks } = kit;
  const poll = oneAtATime(kit.poll);
  const { failures, notes } = checks;
  const config: ChildConfig = { ...base, ratePerSecond: profile.crashRatePerSecond };
  const pair = [startChild(config, poll), startChild(config, poll)] as const;
  const ends = pair.map(watch);
  let runs: ChildRun[];
  try {
    const ended = await until(() => ends.every((end) => end.run !== undefined));
    if (!ended) return { kind: "inconclusive", reason: "the two processes did not both end" };
    runs = await Promise.all(pair.map((child) => child.ended));
  } finally {
    for (const child of pair) child.signal("SIGKILL");
  }
  const owners = pair.map((child) => ownedEpoch(child));
  // The first epoch of a run is its first layout's clock (docs/design.md §2, Shards): the lower
  // of the two, held by exactly one of them.
  const firstEpoch = Math.min(...owners.filter((e): e is number => e !== undefined));
  const first = owners.indexOf(firstEpoch);
  if (first < 0 || owners.lastIndexOf(firstEpoch) !== first) {
    failures.push(
      `exactly one process should own the shard at the run's first epoch; they owned it at epochs ${owners.join(" and ")}`,
    );
    return { kind: "tested", failures, notes };
  }
  const owner = pair[first] as RunningChild;
  const standby = pair[1 - first] as RunningChild;
  if (!/waiting for shard 0 of 1/.test(standby.stderr())) {
    return { kind: "inconclusive", reason: "the second process started after the first had finished: nobody waited" };
  }
  for (const [k, run] of runs.entries()) {
    if (run.code !== 0) failures.push(`process ${k + 1} should finish but ${describeExit(run)}`);
  }
  // Both processes append to one journal, in the order things happened: the standby's sink
  // may open only after the owner's sink did its last (the owner then released the shard).
  const journal = await readJournal(scope);
  const ownerLast = journal.findLastIndex((e) => e.pid === owner.pid);
  const standbyFirst = journal.findIndex((e) => e.pid === standby.pid);
  if (standbyFirst >= 0 && standbyFirst < ownerLast) {
    const overlap = journal.slice(standbyFirst, ownerLast).filter((e) => e.pid === standby.pid);
    failures.push(
      `the standby's sink worked while the other process owned the shard (${overlap.length} of its journal entries came before the owner's last: ${overlap
        .slice(0, 3)
        .map((e) => e.e)
        .join(", ")} …)`,
    );
  }
  if (owner.checkpoints() === 0) failures.push("the owner completed no checkpoint");
  // The standby may take over only what is left: nothing, once the owner finished the input.
  const wrote = journal.some((e) => e.e === "snapshot" && e.pid === standby.pid && Object.keys(e.lanes).length > 0);
  if (wrote) failures.push("the standby wrote records after it took over a shard whose input was finished");
  notes.push(
    `process ${first + 1} owned the shard and completed ${owner.checkpoints()} checkpoints; the other waited, then took it at epoch ${ownedEpoch(standby) ?? "none"}`,
  );
  if (failures.length > 0) return { kind: "tested", failures, notes };
  // The standby's takeover, a restore of the final checkpoint that finds nothing left, is the
  // final run: the usual checks follow it.
  return checkFinalRun(checks, runs[1 - first] as ChildRun, 0);
}
