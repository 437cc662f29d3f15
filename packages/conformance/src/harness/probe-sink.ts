/**
 * Builds one sink from the author's module, the way the scenario job does, and prints what
 * that instance declares (guarantee, capabilities, base class); then exits. The test
 * process runs it once per sink before planning, so the suite plans from the sink's own
 * declarations and checks the definition against them.
 */
import { FlushingSink, GenericWriteAheadSink, IdempotentSink, type Sink, TwoPhaseCommitSink } from "@exactly/core";
import { PROBE_PREFIX, type ProbeConfig, type ProbedSink, type ProbeOutcome } from "./child-protocol.ts";
import { loadSinkFactory } from "./sink-module.ts";

const config = JSON.parse(process.env.CONFORMANCE_PROBE ?? "{}") as ProbeConfig;

function read(sink: Sink<unknown>): ProbedSink {
  if (sink === null || typeof sink !== "object") {
    throw new Error(`${config.sinkExport} returned ${String(sink)}, not a sink`);
  }
  const baseClass =
    sink instanceof TwoPhaseCommitSink
      ? { name: "TwoPhaseCommitSink", lifecycle: "two-phase-commit" as const }
      : sink instanceof GenericWriteAheadSink
        ? { name: "GenericWriteAheadSink", lifecycle: "write-ahead" as const }
        : sink instanceof IdempotentSink
          ? { name: "IdempotentSink", lifecycle: "idempotent" as const }
          : sink instanceof FlushingSink
            ? { name: "FlushingSink", lifecycle: "flush" as const }
            : null;
  return {
    className: (sink as object).constructor?.name || "an anonymous sink",
    guarantee: sink.guarantee ?? null,
    capabilities: sink.capabilities ?? null,
    baseClass,
    transactionTimeoutMs:
      typeof (sink as { transactionTimeoutMs?: unknown }).transactionTimeoutMs === "number"
        ? ((sink as { transactionTimeoutMs?: unknown }).transactionTimeoutMs as number)
        : null,
  };
}

let outcome: ProbeOutcome;
try {
  const factory = await loadSinkFactory(config.sinkModule, config.sinkExport);
  outcome = { ok: true, sink: read(factory({ scope: config.scope, options: config.sinkOptions })) };
} catch (error) {
  outcome = { ok: false, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
}
// The sink was never opened, so there is nothing to close; a client it made may hold the
// event loop, so exit once the line is out.
process.stdout.write(`${PROBE_PREFIX}${JSON.stringify(outcome)}\n`, () => process.exit(outcome.ok ? 0 : 1));
