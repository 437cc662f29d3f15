/**
 * `exactly demo kafka`: not the demo job but a job of its own, the window-sum example (Kafka
 * in, event-time window sums per key, Kafka out), which runs, kills and checks itself. So this
 * target owns its flags, its run and its summary, and none of the demo job's steps.
 */
import { ConfigurationError } from "@exactly/core";
import { addressOf, checkAnyServer } from "../../server-check.ts";
import { DemoInterruptedError, stopSignalOf } from "../demo-interrupt.ts";
import { formatRows, killsLanded, verdict } from "../summary-printer.ts";
import type { DemoFlag } from "./demo-target.ts";

/** The flags only `exactly demo kafka` takes. */
export const KAFKA_FLAGS: readonly DemoFlag[] = [
  { flags: "--brokers <list>", description: "Kafka bootstrap servers (default: $EXACTLY_KAFKA_BROKERS)" },
  { flags: "--require-kcat", description: "fail the run when kcat's check could not run (not installed)" },
];

/** The events `exactly demo kafka` sends without --records. */
export const KAFKA_DEFAULT_EVENTS = 100_000;

/**
 * The package `exactly demo kafka` runs. It is an example, so the CLI does not depend on it:
 * it is loaded when the demo starts, from wherever the CLI is installed.
 */
export const WINDOW_SUM_EXAMPLE = "@exactly/example-kafka-window-sum";

/** What the CLI uses of the example; packages/cli/test/kafka-example.test.ts checks that the example fits it. */
export interface WindowSumExample {
  runWindowSum(options: {
    readonly brokers: readonly string[];
    readonly events: number;
    readonly kills: number;
    readonly seed: number;
    readonly log?: (line: string) => void;
    /** Aborted: the run SIGKILLs its job, removes its checkpoints and rejects (its message says what is left). */
    readonly stop?: AbortSignal;
  }): Promise<WindowSumResult>;
}

export interface WindowSumResult {
  readonly events: number;
  readonly windows: number;
  readonly kills: number;
  readonly elapsedSeconds: number;
  readonly input: string;
  readonly output: string;
  readonly mismatches: string[];
  readonly kcatMismatches: string[] | string;
  readonly kcatStatus: "checked" | "not-installed" | "failed";
}

/**
 * Imports the window-sum example, or fails saying how to get it: nothing is on npm yet, so
 * from a clone, packed as the getting-started guide packs the other packages. Only a missing
 * example is reported so; an installed example that fails to load (say, it lacks a dependency)
 * fails with its own error.
 */
export async function loadWindowSumExample(specifier: string = WINDOW_SUM_EXAMPLE): Promise<WindowSumExample> {
  try {
    return (await import(specifier)) as WindowSumExample;
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === "ERR_MODULE_NOT_FOUND" && String((error as Error).message).includes(`'${specifier}'`)) {
      throw new ConfigurationError(
        "exactly demo kafka",
        `runs the example ${specifier}, which is not installed and not on npm: in a clone of the repository, ` +
          `pack examples/kafka-window-sum and connectors/kafka as docs/getting-started.md packs the others ` +
          `(pnpm pack --pack-destination <dir>), then npm install their .tgz files next to @exactly/cli`,
      );
    }
    throw error;
  }
}

export interface KafkaDemoOptions {
  readonly brokers: readonly string[];
  readonly records: number;
  readonly kills: number;
  readonly seed: number;
  /** kcat's check must run: without kcat the verdict is not ok. */
  readonly requireKcat?: boolean;
  /** A stop signal's abort (demo-interrupt.ts): the run ends in order, with DemoInterruptedError. */
  readonly stop?: AbortSignal;
}

export interface KafkaDemoSummary extends WindowSumResult {
  readonly brokers: readonly string[];
  readonly seed: number;
  /** --kills: more than `kills` when the job finished before the others' fault points. */
  readonly killsAsked: number;
  readonly ok: boolean;
}

/**
 * `exactly demo kafka`: the window-sum example (Kafka in, event-time window sums per key,
 * Kafka out) against the given broker, killed with SIGKILL at random points of the Kafka
 * sink's lifecycle, then checked against a batch computation by two read_committed readers.
 */
export async function runKafkaDemo(options: KafkaDemoOptions): Promise<KafkaDemoSummary> {
  const { runWindowSum } = await loadWindowSumExample();
  if (options.brokers.length === 0) {
    throw new ConfigurationError(
      "--brokers",
      "give the Kafka bootstrap servers (host:port,…) or set EXACTLY_KAFKA_BROKERS",
    );
  }
  await checkAnyServer(
    "--brokers (or $EXACTLY_KAFKA_BROKERS)",
    "a Kafka broker",
    options.brokers.map((broker) => addressOf(broker, 9092)),
  );
  let result: WindowSumResult;
  try {
    result = await runWindowSum({
      brokers: options.brokers,
      events: options.records,
      kills: options.kills,
      seed: options.seed,
      log: (line) => console.error(line),
      ...(options.stop ? { stop: options.stop } : {}),
    });
  } catch (error) {
    const signal = stopSignalOf(options.stop);
    if (signal) throw new DemoInterruptedError(signal, (error as Error).message);
    throw error;
  }
  // kcat is the second opinion. Not installed, it says "not checked" and fails only a run that
  // asked for it (--require-kcat); installed but failed, the run is not ok: a check that was
  // possible did not happen.
  const kcatOk =
    result.kcatStatus === "checked"
      ? result.kcatMismatches.length === 0
      : result.kcatStatus === "not-installed" && options.requireKcat !== true;
  return {
    ...result,
    brokers: options.brokers,
    seed: options.seed,
    killsAsked: options.kills,
    ok: result.mismatches.length === 0 && kcatOk,
  };
}

function describeCheck(problems: readonly string[] | string): string {
  if (typeof problems === "string") return `not checked: ${problems}`;
  if (problems.length === 0) return "every window once, with the batch sum";
  const shown = problems.slice(0, 5).join("; ");
  return `${problems.length} problems: ${shown}${problems.length > 5 ? "; …" : ""}`;
}

export function formatKafkaSummary(s: KafkaDemoSummary): string {
  const rows: Array<[string, string]> = [
    ["brokers", s.brokers.join(",")],
    ["events in", `${s.events} (topic ${s.input})`],
    ["windows expected", `${s.windows} (topic ${s.output})`],
    ["kills (SIGKILL)", `${killsLanded(s.kills, s.killsAsked)} (seed ${s.seed})`],
    ["job elapsed", `${s.elapsedSeconds.toFixed(1)} s`],
    ["our reader", describeCheck(s.mismatches)],
    ["kcat (librdkafka)", describeCheck(s.kcatMismatches)],
  ];
  return formatRows(rows, verdict(s.ok, "every window committed exactly once", s.kills, s.killsAsked));
}
