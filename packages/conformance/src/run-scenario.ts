import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CheckpointStorage, DeliveryGuarantee } from "@exactly/core";
import { ShardCheckpointStorage } from "@exactly/core/internal";
import type { CheckResult } from "./checker.ts";
import type { SinkDeclarations } from "./declarations.ts";
import type { ConformanceDefinition, ScenarioName, ScenarioScope } from "./definition.ts";
import { type Attempt, describeExit, expiredByTimeout, type FinalChecks, finalRunAndCheck } from "./final-checks.ts";
import type { ChildConfig, Hook } from "./harness/child-protocol.ts";
import { type Exercised, exercised, readJournal } from "./harness/journal.ts";
import { coveredIds, runChild } from "./harness/run-child.ts";
import { scenarioCheckpointStorage, sinkModuleConfig } from "./harness/sink-module.ts";
import { Observer } from "./observer.ts";
import type { ProfileSettings, Requirement, RunPlan, ScenarioPlan } from "./scenarios.ts";
import {
  attemptDoubleIdentity,
  attemptZombie,
  describeShardScenario,
  SCENARIO_SHARD,
  SHARD_LEASE_MS,
} from "./shard-scenarios.ts";

export interface ScenarioResult {
  readonly name: ScenarioName;
  readonly description: string;
  /** The defect class the scenario exists to catch. */
  readonly catches: string;
  /**
   * "inconclusive": every attempt tested nothing (a run that should have died finished, a
   * decline that never happened, a rescale that moved no state); neither a pass nor a failure.
   */
  readonly status: "passed" | "failed" | "skipped" | "inconclusive";
  /** What failed, or why each attempt was inconclusive. */
  readonly failures: readonly string[];
  readonly skipReason?: string;
  /** What happened that is worth reading even when the scenario passed. */
  readonly notes: readonly string[];
  /** Faults armed in the runs of the last attempt, in order. */
  readonly faults: readonly string[];
  /** Where the last attempt's SIGKILLs landed, one entry per kill: a fault point, or `inside <hook>`. */
  readonly killsLanded?: readonly string[];
  readonly seed: number;
  /** Attempts made: more than one when an attempt tested nothing and was retried with a fresh seed. */
  readonly attempts: number;
  readonly durationMs: number;
  readonly check?: CheckResult;
  /** What the last attempt's runs exercised (restored state, pending work, rescale across indexes …). */
  readonly exercised?: Exercised;
  /** Kept when the scenario failed, for a post-mortem. */
  readonly scope?: ScenarioScope;
  /** The size of the kept scratch directory, in bytes. */
  readonly scratchBytes?: number;
}

/** Bytes under a directory, for the report of what a failed scenario left behind. */
async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => [])) {
    if (!entry.isFile()) continue;
    total += await stat(join(entry.parentPath, entry.name)).then(
      (s) => s.size,
      () => 0,
    );
  }
  return total;
}

function describeRun(run: RunPlan): string | undefined {
  const order = run.config?.openOrder ? `, ${run.config.openOrder.replace("-", " ")}` : "";
  const at = run.parallelism ? ` (parallelism ${run.parallelism}${order})` : order ? ` (${order.slice(2)})` : "";
  if (run.fault) return `${run.fault.spec} after ${run.fault.afterCheckpoints} checkpoints${at}`;
  if (run.kill) return `kill inside ${run.kill.hook} at ${(run.kill.share * 100).toFixed(0)}% of its operations${at}`;
  if (run.sweep) return `a kill before each operation of ${run.sweep.hook}`;
  if (run.config?.killAfterLateNotification)
    return `SIGKILL after late notification ${run.config.killAfterLateNotification}`;
  if (run.config?.killInSlowSnapshotAfter !== undefined) return `SIGKILL while subtask 0 is slow at a barrier${at}`;
  if (run.stopAfterCheckpoints) return `SIGTERM after ${run.stopAfterCheckpoints} checkpoints`;
  return undefined;
}

/**
 * Where a run's planned kill inside a call landed, from the journal's last kill: inside the
 * call before an asynchronous operation, inside it before a synchronous client's call, or at
 * the call's end (the call made no operation the harness can see).
 */
async function whereKilled(scope: ScenarioScope, planned: Hook): Promise<string> {
  const last = (await readJournal(scope)).findLast((e) => e.e === "kill");
  if (last?.e !== "kill") return `inside ${planned}`;
  if (!last.inside) return `at the end of ${last.hook}`;
  return last.synchronous ? `inside ${last.hook} (before a synchronous call)` : `inside ${last.hook}`;
}

/** Requirements the runs did not meet, in words. */
function unmet(requires: readonly Requirement[], seen: Exercised): string[] {
  const words: Record<string, string> = {
    restoredState: "no run restored sink state",
    pendingRestored: "no restored state held pending work",
    acrossIndexes: "no subtask restored the state of another index",
    merged: "no subtask restored several old subtasks' states",
    declinedAfterPreCommit: "no checkpoint was declined after a subtask pre-committed it",
    lateNotification: "no notification arrived after the next barrier",
    onThreads: "no run had its sink subtasks on two threads",
    pendingAcrossOwners: "no subtask restored pending work of an index whose cleanup another subtask owns",
    cleanupBeforeCommits:
      "no owner of an index finished its cleanup before the subtask that restored that index's pending work committed it",
    commitsBeforeCleanup:
      "no subtask that restored pending work had committed it and begun anew before another subtask cleaned up",
    subsumedCompletion: "no completion reached the sink while an older pre-committed checkpoint was pending",
    declinedThenCompleted: "no completion reached a subtask after a checkpoint it pre-committed was declined",
  };
  return requires.flatMap((r) => {
    if (r.startsWith("killedInside:")) {
      const hook = r.slice("killedInside:".length);
      const hit = hook === "any" ? seen.killedInside.length > 0 : seen.killedInside.includes(hook as never);
      return hit
        ? []
        : [
            `no kill landed inside ${hook === "any" ? "a sink call" : hook} (a call that makes no operation the harness can count, asynchronous or a node:sqlite statement, is killed at its end instead)`,
          ];
    }
    return seen[r as keyof typeof words & keyof Exercised] ? [] : [words[r] as string];
  });
}

/**
 * How to count a hook's operations for a kill, from what earlier runs measured: its own
 * context's when it started any, else the whole process's while it was in flight (a client
 * that sends from its own loop); unmeasured, a guess of 8.
 */
function sizeOf(measured: { ios: number; during: number } | undefined): { length: number; count: "call" | "process" } {
  if (!measured) return { length: 8, count: "call" };
  if (measured.ios > 0) return { length: measured.ios, count: "call" };
  return { length: measured.during, count: "process" };
}

/**
 * The hook a kill goes into: the planned one, or, when earlier runs measured that its calls
 * start no external operation, the next of its alternatives that earlier runs did not
 * measure idle.
 */
function hookFor(kill: NonNullable<RunPlan["kill"]>, measured: Exercised["ios"]): Hook {
  const idle = (hook: Hook) => {
    const m = measured[hook];
    return m !== undefined && m.ios === 0 && m.during === 0;
  };
  const among = kill.among ?? [];
  if (!idle(kill.hook) || among.length === 0) return kill.hook;
  const from = among.indexOf(kill.hook);
  for (let k = 1; k <= among.length; k++) {
    const hook = among[(from + k) % among.length] as Hook;
    if (!idle(hook)) return hook;
  }
  return kill.hook;
}

/**
 * Runs one scenario: its crash runs, then a final run that must finish, then the checks,
 * which follow the sink's own declarations (`sink`). An attempt that tested nothing is
 * retried with a fresh seed, up to the profile's attempts, and is then inconclusive.
 */
export async function runScenario(
  definition: ConformanceDefinition,
  sink: SinkDeclarations,
  planFor: (seed: number) => ScenarioPlan,
  profile: ProfileSettings,
  seed: number,
): Promise<ScenarioResult> {
  const started = Date.now();
  const reasons: string[] = [];
  let plan = planFor(seed);
  let attemptSeed = seed;
  for (let attempt = 1; ; attempt++) {
    const slug = `${definition.name}-${plan.name}`.replace(/[^a-zA-Z0-9-]/g, "-").toLowerCase();
    const scope: ScenarioScope = {
      id: `${slug}-${randomBytes(3).toString("hex")}`,
      dir: await mkdtemp(join(tmpdir(), "exactly-conformance-")),
    };
    let outcome: Attempt | undefined;
    let seen: Exercised | undefined;
    const landed: string[] = [];
    await definition.setup?.(scope);
    try {
      outcome = await attemptScenario(definition, sink, plan, profile, scope, landed);
      seen = exercised(await readJournal(scope));
      if (outcome.kind === "tested" && outcome.failures.length === 0) {
        const missing = unmet(plan.requires ?? [], seen);
        if (missing.length > 0) outcome = { kind: "inconclusive", reason: missing.join("; ") };
      }
    } finally {
      await definition.teardown?.(scope);
      const failed = outcome?.kind === "tested" && outcome.failures.length > 0;
      if (!failed && !process.env.EXACTLY_CONFORMANCE_KEEP) await rm(scope.dir, { recursive: true, force: true });
    }
    const base = {
      name: plan.name,
      description: plan.description,
      catches: plan.catches,
      faults: plan.shards ? describeShardScenario(plan.shards) : plan.runs.flatMap((r) => describeRun(r) ?? []),
      seed: attemptSeed,
      attempts: attempt,
      killsLanded: landed,
      ...(seen ? { exercised: seen } : {}),
    };
    if (outcome.kind === "tested") {
      const failed = outcome.failures.length > 0;
      return {
        ...base,
        status: failed ? "failed" : "passed",
        failures: outcome.failures,
        notes: [...outcome.notes, ...reasons.map((r, i) => `attempt ${i + 1} tested nothing (${r}); retried`)],
        durationMs: Date.now() - started,
        ...(outcome.check ? { check: outcome.check } : {}),
        ...(failed ? { scope, scratchBytes: await directoryBytes(scope.dir) } : {}),
      };
    }
    reasons.push(outcome.reason);
    if (attempt >= profile.attempts) {
      return {
        ...base,
        status: "inconclusive",
        failures: reasons.map((r, i) => `attempt ${i + 1} (seed ${i === 0 ? seed : seed + i * 7919}): ${r}`),
        notes: [],
        durationMs: Date.now() - started,
      };
    }
    attemptSeed = seed + attempt * 7919;
    plan = planFor(attemptSeed);
  }
}

async function attemptScenario(
  definition: ConformanceDefinition,
  sink: SinkDeclarations,
  plan: ScenarioPlan,
  profile: ProfileSettings,
  scope: ScenarioScope,
  landed: string[],
): Promise<Attempt> {
  const failures: string[] = [];
  const notes: string[] = [];
  const records = plan.records ?? profile.records;
  const base: ChildConfig = {
    ...sinkModuleConfig(definition),
    scope,
    records,
    parallelism: 2,
    ratePerSecond: profile.ratePerSecond,
    batchSize: 256,
    checkpointIntervalMs: 100,
    checkpointTimeoutMs: 5_000,
    notifications: "normal",
    ...(definition.workers === undefined ? {} : { workers: definition.workers }),
  };
  const exactlyOnce = sink.guarantee === DeliveryGuarantee.EXACTLY_ONCE;
  const upserts = sink.capabilities.upserts === true;
  const atomic = sink.capabilities.atomicCommits === true;
  // Transactional and write-ahead sinks promise that nothing shows before its checkpoint (I1, docs/design.md §3).
  const watchEarly = exactlyOnce && !upserts;
  // The checkpoints the child's job keeps, read here to tell what each point of the run
  // covered; a sharded job's are those its shard's head names.
  const configured = await scenarioCheckpointStorage(base, scope);
  let storage: CheckpointStorage = configured;
  if (plan.shards) {
    try {
      storage = new ShardCheckpointStorage(configured, SCENARIO_SHARD);
    } catch (error) {
      return { kind: "inconclusive", reason: `the job cannot run as a shard: ${(error as Error).message}` };
    }
  }
  const observer = new Observer(definition, scope, records, watchEarly ? storage : undefined);
  const poll = watchEarly || upserts || atomic ? { poll: observer.poll } : {};
  const checks: FinalChecks = { definition, sink, plan, scope, records, observer, poll, failures, notes };
  if (plan.shards) {
    const sharded: ChildConfig = { ...base, leaseMs: SHARD_LEASE_MS };
    const kit = { base: sharded, profile, poll, records, scope, definition, checks };
    return plan.shards === "zombie" ? attemptZombie(kit) : attemptDoubleIdentity(kit);
  }
  let declined = 0;

  const runs = [...plan.runs];
  for (let index = 0; index < runs.length; index++) {
    const run = runs[index] as RunPlan;
    // Sizes kills by the external operations earlier runs saw the hook's calls make.
    const measured = exercised(await readJournal(scope)).ios;
    if (run.sweep) {
      const length = Math.max(1, sizeOf(measured[run.sweep.hook]).length);
      const kills = Math.min(length, profile.sweep);
      const { between, ...target } = run.sweep;
      const sweep = Array.from({ length: kills }, (_, i) => [
        { kill: { ...target, share: (i + 0.5) / kills } },
        ...(between ? [between] : []),
      ]).flat();
      runs.splice(index, 1, ...sweep);
      index--;
      continue;
    }
    const hook = run.kill ? hookFor(run.kill, measured) : undefined;
    const size = hook ? sizeOf(measured[hook]) : undefined;
    const kill =
      run.kill && hook && size
        ? {
            hook,
            afterCheckpoints: run.kill.afterCheckpoints,
            io: Math.floor(run.kill.share * Math.max(1, size.length)),
            count: size.count,
          }
        : undefined;
    const result = await runChild(
      {
        ...base,
        parallelism: run.parallelism ?? base.parallelism,
        ratePerSecond: profile.crashRatePerSecond,
        ...run.config,
        ...(run.fault ? { fault: run.fault } : {}),
        ...(kill ? { kill } : {}),
      },
      { ...(run.stopAfterCheckpoints ? { stopAfterCheckpoints: run.stopAfterCheckpoints } : {}), ...poll },
    );
    declined += result.outcome?.declined ?? 0;
    const what = (kill ? `kill inside ${kill.hook} before operation ${kill.io}` : describeRun(run)) ?? "its fault";
    if (run.stopAfterCheckpoints === undefined) {
      if (result.signal === "SIGKILL") {
        landed.push(kill ? await whereKilled(scope, kill.hook) : (run.fault?.spec.split("@")[0] ?? "unplanned"));
        continue;
      }
      if (result.code === 0) {
        if (run.mayFinish) continue;
        return { kind: "inconclusive", reason: `run ${index + 1} should have died at ${what} but finished first` };
      }
      const expired = await expiredByTimeout(result, sink.transactionTimeoutMs, scope);
      if (expired) return { kind: "inconclusive", reason: `run ${index + 1}: ${expired}` };
      failures.push(`run ${index + 1} should have died at ${what} but ${describeExit(result)}`);
      return { kind: "tested", failures, notes };
    }
    if (result.code !== 0) {
      failures.push(`run ${index + 1} should have stopped cleanly on SIGTERM but ${describeExit(result)}`);
      return { kind: "tested", failures, notes };
    }
    // A graceful stop commits exactly what was read: everything covered, nothing more.
    const covered = await coveredIds(storage);
    if (covered(records - 1) && covered(0)) {
      return { kind: "inconclusive", reason: "the graceful stop came after the job had read everything" };
    }
    const committed = new Set(await observer.poll("ended"));
    const missing: number[] = [];
    for (let id = 0; id < records; id++) if (covered(id) && !committed.has(id)) missing.push(id);
    if (missing.length > 0 && !upserts) {
      failures.push(
        `after the graceful stop, ${missing.length} records read before it were not committed (first ${missing[0]})`,
      );
    }
  }

  return finalRunAndCheck(
    checks,
    { ...base, parallelism: plan.final?.parallelism ?? base.parallelism, ...plan.final?.config },
    declined,
  );
}
