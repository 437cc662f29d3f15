import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeliveryGuarantee, ExactlyError, type SinkCapabilities } from "@exactly/core";
import type { ConformanceDefinition, SinkLifecycle } from "./definition.ts";
import { PROBE_PREFIX, type ProbeConfig, type ProbedSink, type ProbeOutcome } from "./harness/child-protocol.ts";
import { probeScript } from "./harness/run-child.ts";
import { sinkModuleConfig } from "./harness/sink-module.ts";

/**
 * What the suite plans a sink's scenarios from: the guarantee and capabilities the sink
 * instance declares, and the lifecycle of the base class it extends. Read from a sink the
 * factory builds in a child process, like the scenario runs' sinks.
 */
export interface SinkDeclarations {
  /** The class of the sink the factory builds. */
  readonly sinkClass: string;
  readonly guarantee: DeliveryGuarantee;
  readonly capabilities: SinkCapabilities;
  /**
   * The base class's lifecycle; for a sink that implements `Sink` directly, the
   * definition's `lifecycle` (the author's statement of which fault points it passes).
   */
  readonly lifecycle: SinkLifecycle;
  readonly lifecycleFrom: "base class" | "definition";
  /** The sink's transaction timeout, as it declares it (TwoPhaseCommitSink.transactionTimeoutMs). */
  readonly transactionTimeoutMs: number | undefined;
}

/**
 * The definition and its sink disagree, or the sink's declarations could not be read. The
 * suite reports it before any scenario runs.
 */
export class ConformanceDefinitionError extends ExactlyError {
  constructor(message: string) {
    super("CONFORMANCE_DEFINITION", message);
  }
}

const GUARANTEES: readonly DeliveryGuarantee[] = Object.values(DeliveryGuarantee);
/** Stronger first: a definition may not claim an earlier one than its sink declares. */
const STRENGTH: Record<DeliveryGuarantee, number> = { EXACTLY_ONCE: 2, AT_LEAST_ONCE: 1, NONE: 0 };
const BASE_CLASSES = "TwoPhaseCommitSink, GenericWriteAheadSink, IdempotentSink or FlushingSink";
const LIFECYCLES: readonly SinkLifecycle[] = ["two-phase-commit", "write-ahead", "idempotent", "flush"];

/**
 * Probes by module, export and options: the same factory with the same options builds the
 * same sink. A failed probe is kept as why it failed.
 */
const probed = new Map<string, ProbedSink | { readonly failed: string }>();

/** Builds one sink in a child process and reads what it declares (memoized). */
function probeSink(definition: ConformanceDefinition): ProbedSink {
  const where = sinkModuleConfig(definition);
  const key = JSON.stringify(where);
  let result = probed.get(key);
  if (result === undefined) {
    result = runProbe(definition, where);
    probed.set(key, result);
  }
  if ("failed" in result) {
    throw new ConformanceDefinitionError(
      `${definition.name}: could not build a sink with ${where.sinkExport} from ${where.sinkModule} to read its ` +
        `guarantee and capabilities; the probe ${result.failed}`,
    );
  }
  return result;
}

function runProbe(
  definition: ConformanceDefinition,
  where: ReturnType<typeof sinkModuleConfig>,
): ProbedSink | { readonly failed: string } {
  const slug = `${definition.name}-probe`.replace(/[^a-zA-Z0-9-]/g, "-").toLowerCase();
  const dir = mkdtempSync(join(tmpdir(), "exactly-conformance-probe-"));
  const config: ProbeConfig = { ...where, scope: { id: `${slug}-${randomBytes(3).toString("hex")}`, dir } };
  try {
    const run = spawnSync(process.execPath, [...probeScript.execArgv, probeScript.path], {
      env: { ...process.env, CONFORMANCE_PROBE: JSON.stringify(config), EXACTLY_FAULT: "" },
      encoding: "utf8",
      timeout: 120_000,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const line = run.stdout?.split("\n").find((l) => l.startsWith(PROBE_PREFIX));
    const outcome = line ? (JSON.parse(line.slice(PROBE_PREFIX.length)) as ProbeOutcome) : undefined;
    if (outcome?.ok) return outcome.sink;
    return {
      failed: outcome
        ? `failed: ${outcome.error}`
        : run.error
          ? `failed: ${run.error.message}`
          : run.signal
            ? `was ended by ${run.signal}`
            : `exited with code ${run.status}: ${run.stderr.trim().split("\n").slice(-5).join(" | ")}`,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Where the definition and the probed sink disagree, each naming the field, the claim, and the declaration. */
function disagreements(definition: ConformanceDefinition, sink: ProbedSink): string[] {
  const out: string[] = [];
  const guarantee = sink.guarantee as DeliveryGuarantee;
  if (!GUARANTEES.includes(guarantee)) {
    out.push(
      `guarantee: the sink declares ${JSON.stringify(sink.guarantee)} (${sink.className}.guarantee), ` +
        `not one of ${GUARANTEES.join(", ")}`,
    );
  } else if (definition.guarantee !== undefined && !GUARANTEES.includes(definition.guarantee)) {
    out.push(
      `guarantee: the definition claims ${JSON.stringify(definition.guarantee)}, not one of ${GUARANTEES.join(", ")}; ` +
        `the sink declares ${guarantee} (${sink.className}.guarantee)`,
    );
  } else if (definition.guarantee !== undefined && definition.guarantee !== guarantee) {
    out.push(
      STRENGTH[definition.guarantee] > STRENGTH[guarantee]
        ? `guarantee: the definition claims ${definition.guarantee}, but the sink declares ${guarantee} ` +
            `(${sink.className}.guarantee): the suite will not test a promise the sink does not make`
        : `guarantee: the definition claims ${definition.guarantee}, but the sink declares ${guarantee} ` +
            `(${sink.className}.guarantee): the suite tests what the sink promises its users, not less`,
    );
  }

  const declared = sink.capabilities;
  if (declared === null || typeof declared !== "object" || Array.isArray(declared)) {
    out.push(
      `capabilities: the sink declares ${JSON.stringify(declared)} (${sink.className}.capabilities), not an object`,
    );
  } else {
    for (const [name, claim] of Object.entries(definition.capabilities ?? {})) {
      if (claim === undefined) continue;
      const has = (declared as Record<string, unknown>)[name];
      if (Boolean(claim) === Boolean(has)) continue;
      out.push(
        claim
          ? `capabilities.${name}: the definition claims true, but the sink does not declare it ` +
              `(${sink.className}.capabilities.${name} is ${JSON.stringify(has) ?? "undefined"})`
          : `capabilities.${name}: the definition claims false, but the sink declares true ` +
              `(${sink.className}.capabilities.${name}): the suite runs what the sink declares; ` +
              `to leave out scenarios, list them in skip with a reason`,
      );
    }
  }

  if (sink.baseClass && definition.lifecycle !== undefined && definition.lifecycle !== sink.baseClass.lifecycle) {
    out.push(
      `lifecycle: the definition states "${definition.lifecycle}", but the sink (${sink.className}) extends ` +
        `${sink.baseClass.name}, whose lifecycle is "${sink.baseClass.lifecycle}"`,
    );
  }
  if (definition.lifecycle !== undefined && !LIFECYCLES.includes(definition.lifecycle)) {
    out.push(
      `lifecycle: the definition states ${JSON.stringify(definition.lifecycle)}, not one of ${LIFECYCLES.join(", ")}`,
    );
  }
  if (!sink.baseClass && definition.lifecycle === undefined) {
    out.push(
      `lifecycle: the sink (${sink.className}) extends none of ${BASE_CLASSES}, so the definition must state ` +
        `which fault points it passes: lifecycle "two-phase-commit", "write-ahead", "idempotent" or "flush"`,
    );
  }
  const timeout = sink.transactionTimeoutMs;
  if (
    definition.transactionTimeoutMs !== undefined &&
    timeout !== null &&
    timeout !== undefined &&
    definition.transactionTimeoutMs !== timeout
  ) {
    out.push(
      `transactionTimeoutMs: the definition states ${definition.transactionTimeoutMs}, but the sink declares ` +
        `${timeout} (${sink.className}.transactionTimeoutMs)`,
    );
  }

  // The checks need a reader of the right kind: a check that could not run would pass nothing.
  const upserts = Boolean((declared as SinkCapabilities | null)?.upserts);
  if (upserts && typeof definition.readUpserts !== "function") {
    out.push(
      `readUpserts: the sink declares capabilities.upserts (${sink.className}), so the definition must give ` +
        "readUpserts (what each key holds, with its version): the suite checks upserts per key, not as a list of ids",
    );
  }
  if (!upserts && typeof definition.readCommitted !== "function") {
    out.push(
      `readCommitted: the sink (${sink.className}) does not declare capabilities.upserts, so the definition must ` +
        "give readCommitted (every id a committed reader sees)",
    );
  }
  if (!upserts && typeof definition.readUpserts === "function") {
    out.push(
      `readUpserts: the definition gives it, but the sink (${sink.className}) does not declare capabilities.upserts; ` +
        "the suite would check keys the sink never promised",
    );
  }
  return out;
}

/**
 * The sink's own declarations, which the suite plans from. Throws a
 * {@link ConformanceDefinitionError} naming every field where the definition claims
 * something the sink does not declare, or when the sink cannot be built.
 */
export function sinkDeclarations(definition: ConformanceDefinition): SinkDeclarations {
  const sink = probeSink(definition);
  const where = sinkModuleConfig(definition);
  const problems = disagreements(definition, sink);
  if (problems.length > 0) {
    throw new ConformanceDefinitionError(
      [
        `${definition.name}: the definition disagrees with the sink its factory builds ` +
          `(${sink.className}, from ${where.sinkExport} in ${where.sinkModule}):`,
        ...problems.map((p) => `  - ${p}`),
        "  The suite plans from the sink's own guarantee, capabilities and base class: drop these fields " +
          "from the definition, or make them agree.",
      ].join("\n"),
    );
  }
  const lifecycle = (sink.baseClass?.lifecycle ?? definition.lifecycle) as SinkLifecycle;
  return {
    sinkClass: sink.className,
    guarantee: sink.guarantee as DeliveryGuarantee,
    capabilities: sink.capabilities as SinkCapabilities,
    lifecycle,
    lifecycleFrom: sink.baseClass ? "base class" : "definition",
    transactionTimeoutMs: sink.transactionTimeoutMs ?? definition.transactionTimeoutMs,
  };
}

/** One line for a report: `ToySink: EXACTLY_ONCE, two-phase-commit, rescale abortsLingering`. */
export function describeDeclarations(sink: SinkDeclarations): string {
  const flags = Object.entries(sink.capabilities)
    .filter(([, on]) => on)
    .map(([name]) => name);
  const lifecycle =
    sink.lifecycleFrom === "definition" ? `${sink.lifecycle} (as the definition states)` : sink.lifecycle;
  return `${sink.sinkClass}: ${sink.guarantee}, ${lifecycle}, capabilities ${flags.join(" ") || "none"}`;
}
