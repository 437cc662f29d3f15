import { DeliveryGuarantee } from "@exactly/core";
import { FAULT_POINTS, type FaultPoint, seededRandom } from "@exactly/core/testing";
import type { SinkDeclarations } from "./declarations.ts";
import type { ConformanceDefinition, ScenarioName, SinkLifecycle } from "./definition.ts";
import type { ChildConfig } from "./harness/child-protocol.ts";

/** One run of the job inside a scenario, before the final run that must finish. */
export interface RunPlan {
  /** `<point>@<n>`: the run must die there by SIGKILL. */
  readonly fault?: `${FaultPoint}@${number}`;
  /** Stop gracefully (SIGTERM) after this long; the run must exit cleanly. */
  readonly stopAfterMs?: number;
  readonly parallelism?: number;
  readonly config?: Partial<ChildConfig>;
  /** Chaos runs may finish before their fault point; others must not. */
  readonly mayFinish?: boolean;
}

export interface ScenarioPlan {
  readonly name: ScenarioName;
  readonly description: string;
  readonly runs: readonly RunPlan[];
  /** Parallelism and settings of the final run. */
  readonly final?: { readonly parallelism?: number; readonly config?: Partial<ChildConfig> };
  /** The final run may fail loudly instead of finishing (transaction timeout). */
  readonly loudFailureAllowed?: readonly string[];
  /** The scenario needs at least one declined checkpoint to have happened. */
  readonly needsDecline?: boolean;
}

export type Profile = "ci" | "full";

export interface ProfileSettings {
  readonly records: number;
  readonly ratePerSecond: number;
  readonly chaosKills: number;
}

export const PROFILES: Record<Profile, ProfileSettings> = {
  ci: { records: 3000, ratePerSecond: 3000, chaosKills: 3 },
  full: { records: 12_000, ratePerSecond: 4000, chaosKills: 10 },
};

/** The fault points a sink of this lifecycle passes through. */
export function faultPointsOf(sink: { readonly lifecycle: SinkLifecycle }): readonly FaultPoint[] {
  if (sink.lifecycle === "idempotent") return ["mid-write", "after-pre-commit", "after-checkpoint-durable"];
  return FAULT_POINTS;
}

/**
 * Every scenario, with why it does not apply to a sink (undefined when it does), from the
 * sink's own declarations. The occurrence numbers put each crash a few checkpoints into a
 * run at parallelism 2.
 */
export function planScenarios(
  definition: ConformanceDefinition,
  sink: SinkDeclarations,
  profile: ProfileSettings,
  seed: number,
): Array<{ plan: ScenarioPlan; notApplicable?: string }> {
  const points = new Set(faultPointsOf(sink));
  const needs = (point: FaultPoint) =>
    points.has(point) ? undefined : `a ${sink.lifecycle} sink never reaches the ${point} fault point`;
  const canRescale = sink.capabilities.rescale === true;
  const rescale = canRescale ? undefined : "the sink does not declare capabilities.rescale";
  const crash = (name: ScenarioName, description: string, ...faults: Array<`${FaultPoint}@${number}`>) => ({
    plan: { name, description, runs: faults.map((fault) => ({ fault })) },
    notApplicable: faults.map((f) => needs(f.split("@")[0] as FaultPoint)).find((r) => r !== undefined),
  });
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)] as T;
  const chaosPoints = [...points].filter((p) => p !== "during-recovery-commit" && p !== "during-lingering-abort");
  const chaosRuns: RunPlan[] = Array.from({ length: profile.chaosKills }, () => ({
    fault: `${pick(chaosPoints)}@${1 + Math.floor(random() * 8)}` as const,
    mayFinish: true,
    ...(canRescale ? { parallelism: 1 + Math.floor(random() * 3) } : {}),
  }));
  return [
    { plan: { name: "clean-run", description: "one run, no faults", runs: [] } },
    {
      plan: {
        name: "graceful-stop",
        description: "SIGTERM mid-run: final checkpoint, commit, exit; then restart to the end",
        runs: [{ stopAfterMs: 700 }],
      },
    },
    crash("crash-after-begin", "SIGKILL right after a transaction was begun", "after-begin@5"),
    crash("crash-mid-write", "SIGKILL between two written batches", "mid-write@12"),
    crash(
      "crash-after-pre-commit",
      "SIGKILL after pre-commit, before the checkpoint is acknowledged",
      "after-pre-commit@5",
    ),
    crash(
      "crash-after-checkpoint-durable",
      "SIGKILL after the checkpoint is durable, before any commit: recovery must commit it",
      "after-checkpoint-durable@3",
    ),
    crash("crash-mid-commit", "SIGKILL inside or right after a commit: recovery commits again (I5)", "mid-commit@4"),
    crash(
      "crash-during-recovery-commit",
      "SIGKILL while recovery commits restored transactions",
      "after-checkpoint-durable@3",
      "during-recovery-commit@1",
    ),
    crash(
      "crash-during-lingering-abort",
      "SIGKILL while recovery aborts lingering work",
      "mid-write@12",
      "during-lingering-abort@1",
    ),
    crash("double-crash", "SIGKILL, then SIGKILL again soon after the restart", "after-pre-commit@5", "mid-write@4"),
    {
      plan: {
        name: "rescale-up",
        description: "crash at parallelism 1, finish at parallelism 3",
        runs: [{ fault: "after-checkpoint-durable@3", parallelism: 1 }],
        final: { parallelism: 3 },
      },
      notApplicable: rescale,
    },
    {
      plan: {
        name: "rescale-down",
        description: "crash at parallelism 3, finish at parallelism 1",
        runs: [{ fault: "mid-write@20", parallelism: 3 }],
        final: { parallelism: 1 },
      },
      notApplicable: rescale,
    },
    {
      plan: {
        name: "duplicate-notifications",
        description: "every completion notification arrives twice",
        runs: [],
        final: { config: { notifications: "duplicate" } },
      },
    },
    {
      plan: {
        name: "late-notifications",
        description: "completion notifications of older checkpoints arrive again after newer ones",
        runs: [],
        final: { config: { notifications: "late" } },
      },
    },
    {
      plan: {
        name: "declined-checkpoint",
        description: "checkpoint 3 times out and is declined; its data goes with the next one",
        runs: [],
        final: { config: { declineCheckpoint: 3, checkpointTimeoutMs: 300 } },
        needsDecline: true,
      },
    },
    {
      plan: {
        name: "transaction-timeout",
        description: "commits are held past the transaction timeout: fail loudly or stay exactly once",
        runs: [],
        final: { config: { holdCommitsMs: Math.ceil((definition.transactionTimeoutMs ?? 0) * 1.5) + 200 } },
        loudFailureAllowed: ["TRANSACTION_LOST", "CONFIGURATION"],
      },
      notApplicable:
        definition.transactionTimeoutMs === undefined
          ? "the sink's external system has no transaction timeout (definition.transactionTimeoutMs)"
          : sink.guarantee !== DeliveryGuarantee.EXACTLY_ONCE
            ? "only exactly-once sinks hold transactions"
            : undefined,
    },
    {
      plan: {
        name: "chaos",
        description: `${profile.chaosKills} SIGKILLs at random fault points${canRescale ? " and parallelisms" : ""} (seed ${seed})`,
        runs: chaosRuns,
      },
    },
  ];
}
