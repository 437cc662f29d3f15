import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeliveryGuarantee } from "@exactly/core";
import { type CheckResult, checkIds, violations } from "./checker.ts";
import type { SinkDeclarations } from "./declarations.ts";
import type { ConformanceDefinition, ScenarioName, ScenarioScope } from "./definition.ts";
import type { ChildConfig } from "./harness/child-protocol.ts";
import { type ChildRun, coveredIds, runChild, visibilityWatch } from "./harness/run-child.ts";
import { sinkModuleConfig } from "./harness/sink-module.ts";
import type { ProfileSettings, ScenarioPlan } from "./scenarios.ts";

export interface ScenarioResult {
  readonly name: ScenarioName;
  readonly description: string;
  readonly status: "passed" | "failed" | "skipped";
  /** Why it was skipped, or what failed. */
  readonly failures: readonly string[];
  readonly skipReason?: string;
  /** What happened that is worth reading even when the scenario passed. */
  readonly notes: readonly string[];
  /** Faults armed in the runs, in order. */
  readonly faults: readonly string[];
  readonly seed: number;
  readonly durationMs: number;
  readonly check?: CheckResult;
  /** Kept when the scenario failed, for a post-mortem. */
  readonly scope?: ScenarioScope;
}

function describeExit(run: ChildRun): string {
  if (run.signal) return `ended by ${run.signal}`;
  const why = run.outcome?.error ?? run.stderr.trim().split("\n").slice(-3).join(" | ");
  return `exited with code ${run.code}${why ? `: ${why}` : ""}`;
}

/**
 * Runs one scenario: its crash runs, then a final run that must finish, then the checks,
 * which follow the sink's own declarations (`sink`).
 */
export async function runScenario(
  definition: ConformanceDefinition,
  sink: SinkDeclarations,
  plan: ScenarioPlan,
  profile: ProfileSettings,
  seed: number,
): Promise<ScenarioResult> {
  const started = Date.now();
  const slug = `${definition.name}-${plan.name}`.replace(/[^a-zA-Z0-9-]/g, "-").toLowerCase();
  const scope: ScenarioScope = {
    id: `${slug}-${randomBytes(3).toString("hex")}`,
    dir: await mkdtemp(join(tmpdir(), "exactly-conformance-")),
  };
  const failures: string[] = [];
  const notes: string[] = [];
  const faults = plan.runs.flatMap((r) => (r.fault ? [r.fault] : r.stopAfterMs ? ["SIGTERM"] : []));
  const done = (check?: CheckResult): ScenarioResult => ({
    name: plan.name,
    description: plan.description,
    status: failures.length === 0 ? "passed" : "failed",
    failures,
    notes,
    faults,
    seed,
    durationMs: Date.now() - started,
    ...(check ? { check } : {}),
    ...(failures.length > 0 ? { scope } : {}),
  });

  const base: ChildConfig = {
    ...sinkModuleConfig(definition),
    scope,
    records: profile.records,
    parallelism: 2,
    ratePerSecond: profile.ratePerSecond,
    checkpointIntervalMs: 100,
    checkpointTimeoutMs: 5_000,
    notifications: "normal",
  };
  const exactlyOnce = sink.guarantee === DeliveryGuarantee.EXACTLY_ONCE;
  // Transactional and write-ahead sinks promise that nothing shows before its checkpoint (I1, docs/design.md §3).
  const early = new Set<number>();
  const poll = exactlyOnce && sink.lifecycle !== "idempotent" ? visibilityWatch(definition, scope, early) : undefined;
  let declined = 0;

  await definition.setup?.(scope);
  try {
    for (const [index, run] of plan.runs.entries()) {
      const result = await runChild(
        { ...base, parallelism: run.parallelism ?? base.parallelism, ...run.config },
        {
          ...(run.fault ? { fault: run.fault } : {}),
          ...(run.stopAfterMs ? { stopAfterMs: run.stopAfterMs } : {}),
          ...(poll ? { poll } : {}),
        },
      );
      declined += result.outcome?.declined ?? 0;
      if (run.fault) {
        if (result.signal === "SIGKILL" || (run.mayFinish && result.code === 0)) continue;
        failures.push(`run ${index + 1} should have died at ${run.fault} but ${describeExit(result)}`);
        return done();
      }
      if (result.code !== 0) {
        failures.push(`run ${index + 1} should have stopped cleanly on SIGTERM but ${describeExit(result)}`);
        return done();
      }
      // A graceful stop commits exactly what was read: everything covered, nothing more.
      const committed = new Set(await definition.readCommitted(scope, "ended"));
      const covered = await coveredIds(scope);
      const missing: number[] = [];
      for (let id = 0; id < profile.records; id++) if (covered(id) && !committed.has(id)) missing.push(id);
      if (missing.length > 0) {
        failures.push(
          `after the graceful stop, ${missing.length} records read before it were not committed (first ${missing[0]})`,
        );
      }
      if (covered(profile.records - 1) && covered(0)) {
        failures.push("the graceful stop came after the job had read everything: the scenario did not stop it mid-run");
      }
    }

    const final = await runChild(
      { ...base, parallelism: plan.final?.parallelism ?? base.parallelism, ...plan.final?.config },
      poll ? { poll } : {},
    );
    declined += final.outcome?.declined ?? 0;
    if (final.code !== 0) {
      const code = final.outcome?.errorCode;
      if (code && plan.loudFailureAllowed?.includes(code)) {
        notes.push(`failed loudly as allowed: ${final.outcome?.error}`);
        return done();
      }
      failures.push(`the final run should finish but ${describeExit(final)}`);
      return done();
    }
    if (plan.needsDecline && declined === 0)
      failures.push("no checkpoint was declined, so the scenario tested nothing");

    const ids = checkIds(profile.records, await definition.readCommitted(scope, "ended"));
    const check: CheckResult = {
      ...ids,
      expected: profile.records,
      visibleBeforeComplete: [...early].sort((a, b) => a - b),
      lingering: (await definition.probeLingering?.(scope)) ?? [],
    };
    failures.push(...violations(check, sink.guarantee === DeliveryGuarantee.AT_LEAST_ONCE));
    if (check.duplicated.length > 0 && failures.length === 0) {
      notes.push(`${check.duplicated.length} ids duplicated, as at-least-once allows`);
    }
    return done(check);
  } finally {
    await definition.teardown?.(scope);
    if (failures.length === 0) await rm(scope.dir, { recursive: true, force: true });
  }
}
