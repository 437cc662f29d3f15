/**
 * `exactly demo` and `exactly demo kafka` as the parser sees them. The demo job's flags are
 * declared here; each `--sink` target declares its own (targets/), and a flag of another
 * target than the chosen one is refused before anything runs.
 */

import { writeFile } from "node:fs/promises";
import { ConfigurationError } from "@exactly/core";
import { type Command, Option } from "commander";
import { integer, integerAtLeast, integerBetween, port, writableFile } from "../flag-parsers.ts";
import { runDemo } from "./demo-command.ts";
import { DemoInterruptedError, type SignalWatch, watchStopSignals } from "./demo-interrupt.ts";
import { DEMO_MAX_PARALLELISM } from "./demo-job-config.ts";
import {
  DEMO_DEFAULT_RECORDS,
  DEMO_MAX_KILLS,
  DEMO_MAX_RECORDS,
  DEMO_SINKS,
  type DemoSummary,
} from "./demo-options.ts";
import { formatSummary } from "./summary-printer.ts";
import { DEMO_TARGETS } from "./targets/demo-targets.ts";
import {
  formatKafkaSummary,
  KAFKA_DEFAULT_EVENTS,
  KAFKA_FLAGS,
  type KafkaDemoSummary,
  runKafkaDemo,
} from "./targets/kafka-target.ts";

/** Flags both demos take. */
function sharedFlags(records: { what: string; default: number; max?: number }): Option[] {
  return [
    // The default is the command's own (demo or demo kafka), applied in its action: shown here only.
    new Option("--records <n>", `${records.what} (default: ${records.default})`).argParser(
      records.max === undefined ? integerAtLeast(1) : integerBetween(1, records.max),
    ),
    new Option("--kills <k>", "SIGKILLs during the run").argParser(integerBetween(0, DEMO_MAX_KILLS)).default(3),
    new Option("--seed <s>", "seed of the kill plan (reproduces it)").argParser(integer),
    // The file is checked before the run: a run of minutes is not lost to a typo in its last step.
    new Option(
      "--json [file]",
      "print the summary as JSON on the last line, or write it to <file> (its directory must exist)",
    ).argParser(writableFile),
  ];
}
const SHARED = new Set(sharedFlags({ what: "", default: 0 }).map((option) => option.attributeName()));

function flagOptions(flags: typeof KAFKA_FLAGS): Option[] {
  return flags.map(({ flags: spelling, description }) => new Option(spelling, description));
}

/** Options of a command given on its command line, not defaults. */
function given(command: Command, options: readonly Option[]): Option[] {
  return options.filter((option) => command.getOptionValueSource(option.attributeName()) === "cli");
}

export function addDemoCommands(program: Command): void {
  const demo = program
    .command("demo")
    .description("run the demo job, kill it with SIGKILL at random moments, and check its committed output");
  for (const option of sharedFlags({
    what: "records to generate",
    default: DEMO_DEFAULT_RECORDS,
    max: DEMO_MAX_RECORDS,
  })) {
    demo.addOption(option);
  }
  demo
    .option("--out <dir>", "output directory, empty or new, kept after the run (default: a temp directory, removed)")
    .option("--keep", "keep the temp output directory after the run (the one used without --out)")
    .addOption(
      new Option(
        "--parallelism <p>",
        `parallelism of every stage, at most ${DEMO_MAX_PARALLELISM} (the job's key groups)`,
      )
        .argParser(integerBetween(1, DEMO_MAX_PARALLELISM))
        .default(2),
    )
    .option(
      "--workers <n>",
      "worker threads the subtasks run on, 1 for one event loop (default: the machine's cores, at most --parallelism)",
      integerAtLeast(1),
    )
    .option(
      "--guarantee <g>",
      "exactly-once or at-least-once (default: exactly-once, or at-least-once with --checkpointing at-least-once)",
    )
    .addOption(
      new Option(
        "--checkpointing <mode>",
        "barrier alignment: exactly-once (aligned) or at-least-once (unaligned)",
      ).default("exactly-once", "exactly-once"),
    )
    .option(
      "--rate <n>",
      "source records/s, 0 for unlimited (default: paced when --kills > 0, except with --checkpointing at-least-once)",
      integerAtLeast(0),
    )
    .addOption(
      new Option("--sink <sink>", "where the demo job writes: rolling files in --out, or a server")
        .choices(DEMO_SINKS)
        .default("file", "file"),
    )
    .option("--metrics-port <p>", "serve the job's metrics in Prometheus format on this port (/metrics)", port)
    .option(
      "--shards <n>",
      `run the job as n shard processes: kills restart a shard, one shard is paused past its lease and resumed, and the job is rescaled once (n × --parallelism at most ${DEMO_MAX_PARALLELISM})`,
      integerAtLeast(1),
    );
  const owned: Array<{ option: Option; owner: string }> = [];
  for (const target of Object.values(DEMO_TARGETS)) {
    for (const option of flagOptions(target.flags)) {
      demo.addOption(option.helpGroup(`With --sink ${target.sink}:`));
      owned.push({ option, owner: `--sink ${target.sink}` });
    }
  }
  // `exactly demo --kafka`, from before `exactly demo kafka`: it still works, with a note.
  demo.addOption(new Option("--kafka", "deprecated: run `exactly demo kafka`").hideHelp());
  for (const option of flagOptions(KAFKA_FLAGS)) {
    demo.addOption(option.hideHelp());
    owned.push({ option, owner: "exactly demo kafka" });
  }
  demo
    .hook("preAction", (command, actionCommand) => {
      if (actionCommand === command) refuseForeignFlags(command, owned);
    })
    .hook("preSubcommand", (command) => {
      const before = given(command, command.options as Option[]);
      if (before.length > 0) {
        throw new ConfigurationError(
          `--${before[0]?.name()}`,
          "give the flags of exactly demo kafka after its name: exactly demo kafka [flags]",
        );
      }
    })
    .action(async (opts) => {
      if (opts.kafka) return kafkaDemo(opts);
      const seed = opts.seed ?? randomSeed();
      const signals = watchStopSignals();
      let summary: DemoSummary;
      try {
        summary = await runDemo(
          {
            ...opts,
            records: opts.records ?? DEMO_DEFAULT_RECORDS,
            seed,
            json: opts.json !== undefined,
            keep: opts.keep === true,
            progress: true,
          },
          signals.signal,
        );
      } catch (error) {
        if (endByStopSignal(error, signals)) return;
        throw error;
      } finally {
        signals.dispose();
      }
      console.log(formatSummary(summary));
      await printJson(opts.json, summary);
      if (!summary.ok) process.exitCode = 1;
    });

  const kafka = demo
    .command("kafka")
    .description(
      "the Kafka window-sum job instead: Kafka in, event-time window sums, Kafka out, killed and checked the same way",
    );
  for (const option of sharedFlags({ what: "events to send", default: KAFKA_DEFAULT_EVENTS })) kafka.addOption(option);
  for (const option of flagOptions(KAFKA_FLAGS)) kafka.addOption(option);
  kafka.action(kafkaDemo);
}

/**
 * A flag of one `--sink` target with another, or a flag of the demo job with the deprecated
 * `--kafka`: refused, naming it, before anything runs.
 */
function refuseForeignFlags(command: Command, owned: ReadonlyArray<{ option: Option; owner: string }>): void {
  const opts = command.opts();
  if (opts.kafka) {
    console.error("exactly demo --kafka is deprecated: run exactly demo kafka");
    const kafkaFlags = new Set([...SHARED, "kafka", ...flagOptions(KAFKA_FLAGS).map((o) => o.attributeName())]);
    const jobOnly = given(command, command.options as Option[]).filter((o) => !kafkaFlags.has(o.attributeName()));
    if (jobOnly.length > 0) {
      const names = jobOnly.map((o) => `--${o.name()}`).join(", ");
      throw new ConfigurationError("--kafka", `${names} only applies to the demo job, not --kafka`);
    }
    return;
  }
  for (const { option, owner } of owned) {
    if (owner !== `--sink ${opts.sink}` && given(command, [option]).length > 0) {
      throw new ConfigurationError(`--${option.name()}`, `only applies to ${owner}`);
    }
  }
}

/**
 * A run a stop signal ended: says what became of its output and ends by that signal's default
 * action, as a shell expects of a process a signal stopped (true). False for any other error.
 */
function endByStopSignal(error: unknown, signals: SignalWatch): boolean {
  if (!(error instanceof DemoInterruptedError)) return false;
  signals.dispose();
  console.error(error.message);
  process.kill(process.pid, error.signal);
  return true;
}

async function kafkaDemo(opts: Record<string, unknown>): Promise<void> {
  const brokers = String(opts.brokers ?? process.env.EXACTLY_KAFKA_BROKERS ?? "")
    .split(",")
    .filter(Boolean);
  const signals = watchStopSignals();
  let summary: KafkaDemoSummary;
  try {
    summary = await runKafkaDemo({
      brokers,
      records: (opts.records as number | undefined) ?? KAFKA_DEFAULT_EVENTS,
      kills: opts.kills as number,
      seed: (opts.seed as number | undefined) ?? randomSeed(),
      requireKcat: opts.requireKcat === true,
      stop: signals.signal,
    });
  } catch (error) {
    if (endByStopSignal(error, signals)) return;
    throw error;
  } finally {
    signals.dispose();
  }
  console.log(formatKafkaSummary(summary));
  await printJson(opts.json, summary);
  if (!summary.ok) process.exitCode = 1;
}

/** `--json`: the summary as the last line of stdout, or, given a file (checked by the parser), in it. */
async function printJson(json: unknown, summary: object): Promise<void> {
  if (typeof json === "string" && json !== "-") await writeFile(json, `${JSON.stringify(summary)}\n`);
  else if (json !== undefined) console.log(JSON.stringify(summary));
}

function randomSeed(): number {
  return Math.floor(Math.random() * 2 ** 31);
}
