/**
 * How an attempt of a scenario ends, and the final run every scenario ends with: it must
 * finish, and then the checks read what the sink's system holds.
 */
import { DeliveryGuarantee } from "@exactly/core";
import { type CheckResult, checkIds, violations } from "./checker.ts";
import type { SinkDeclarations } from "./declarations.ts";
import type { ConformanceDefinition, ScenarioScope } from "./definition.ts";
import type { ChildConfig } from "./harness/child-protocol.ts";
import { completedTransactions, readJournal } from "./harness/journal.ts";
import { type ChildRun, type RunOptions, runChild } from "./harness/run-child.ts";
import type { Observer } from "./observer.ts";
import type { ScenarioPlan } from "./scenarios.ts";

export type Attempt =
  | { readonly kind: "tested"; readonly failures: string[]; readonly notes: string[]; readonly check?: CheckResult }
  | { readonly kind: "inconclusive"; readonly reason: string };

export function describeExit(run: ChildRun): string {
  if (run.signal) return `ended by ${run.signal}`;
  const why = run.outcome?.error ?? run.stderr.trim().split("\n").slice(-3).join(" | ");
  return `exited with code ${run.code}${why ? `: ${why}` : ""}`;
}

/**
 * Whether a run's loud loss of a transaction is the external system's own timeout at work:
 * the sink declares one, the run failed with TRANSACTION_LOST naming checkpoint n, and n's
 * last snapshot is older than the timeout. Then a slow machine, not the sink, made the
 * transaction expire between runs, and the attempt tested nothing.
 */
export async function expiredByTimeout(
  result: ChildRun,
  timeoutMs: number | undefined,
  scope: ScenarioScope,
): Promise<string | undefined> {
  if (timeoutMs === undefined || result.outcome?.errorCode !== "TRANSACTION_LOST") return undefined;
  const checkpoint = Number(/checkpoint (\d+)/.exec(result.outcome.error ?? "")?.[1]);
  if (!Number.isInteger(checkpoint)) return undefined;
  let last = 0;
  for (const entry of await readJournal(scope)) {
    if (entry.e === "snapshot" && entry.checkpointId === checkpoint) last = Math.max(last, entry.at);
  }
  const age = Date.now() - last;
  if (last === 0 || age <= timeoutMs) return undefined;
  return `checkpoint ${checkpoint}'s transaction was pre-committed ${age} ms ago, past the system's transaction timeout (${timeoutMs} ms), before the runs got to commit it: the machine was too slow`;
}

/** What the final run's checks read: the scenario, its observer, and the failures and notes so far. */
export interface FinalChecks {
  readonly definition: ConformanceDefinition;
  readonly sink: SinkDeclarations;
  readonly plan: ScenarioPlan;
  readonly scope: ScenarioScope;
  readonly records: number;
  readonly observer: Observer;
  readonly poll: RunOptions;
  readonly failures: string[];
  readonly notes: string[];
}

/**
 * The final run, which must finish, then the checks on what the sink's system holds:
 * exactly (or at least) once, nothing visible before its checkpoint completed, nothing
 * lingering, no transaction seen in pieces, and the upsert checks.
 */
export async function finalRunAndCheck(
  checks: FinalChecks,
  config: ChildConfig,
  declinedBefore: number,
): Promise<Attempt> {
  return checkFinalRun(checks, await runChild(config, checks.poll), declinedBefore);
}

/** The checks after a final run that already ended (a standby that took over and finished). */
export async function checkFinalRun(checks: FinalChecks, final: ChildRun, declinedBefore: number): Promise<Attempt> {
  const { definition, sink, plan, scope, records, observer, failures, notes } = checks;
  const upserts = sink.capabilities.upserts === true;
  const atomic = sink.capabilities.atomicCommits === true;
  let declined = declinedBefore;

  declined += final.outcome?.declined ?? 0;
  if (final.code !== 0) {
    const code = final.outcome?.errorCode;
    if (code && plan.loudFailureAllowed?.includes(code)) {
      notes.push(`failed loudly as allowed: ${final.outcome?.error}`);
      return { kind: "tested", failures, notes };
    }
    const expired = await expiredByTimeout(final, sink.transactionTimeoutMs, scope);
    if (expired) return { kind: "inconclusive", reason: `the final run: ${expired}` };
    failures.push(`the final run should finish but ${describeExit(final)}`);
    return { kind: "tested", failures, notes };
  }

  const ended = await observer.poll("ended");
  const journal = await readJournal(scope);
  const check: CheckResult = {
    ...(upserts ? { committed: ended.length, lost: [], duplicated: [], phantom: [] } : checkIds(records, ended)),
    expected: records,
    visibleBeforeComplete: [...observer.early].sort((a, b) => a - b),
    lingering: (await definition.probeLingering?.(scope)) ?? [],
    torn: atomic ? observer.torn(completedTransactions(journal)) : [],
    ...(upserts
      ? {
          upserts: {
            movedBack: observer.movedBack,
            nondeterministic: observer.nondeterministic,
            unordered: observer.unordered,
            misrouted: observer.misrouted,
            stale: observer.staleKeys(),
          },
        }
      : {}),
  };
  failures.push(...violations(check, sink.guarantee === DeliveryGuarantee.AT_LEAST_ONCE));
  if (check.duplicated.length > 0 && failures.length === 0) {
    notes.push(`${check.duplicated.length} ids duplicated, as at-least-once allows`);
  }
  if (declined > 0) notes.push(`${declined} checkpoints declined`);
  return { kind: "tested", failures, notes, check };
}
