import { readFileSync } from "node:fs";
import { ConfigurationError, ExactlyError } from "@exactly/core";
import { Command, CommanderError, Help, Option } from "commander";
import { ONLY_HELP, runConformanceCommand } from "./conformance/conformance-command.ts";
import { addDemoCommands } from "./demo/demo-cli.ts";
import {
  existingDirectory,
  existingFile,
  integer,
  integerAtLeast,
  logFormat,
  port,
  positiveSeconds,
  seconds,
  uidList,
  writableFile,
} from "./flag-parsers.ts";
import {
  formatInspection,
  formatShards,
  groupLocation,
  inspectCheckpoints,
  inspectGroups,
  inspectShards,
} from "./inspect/inspect-command.ts";
import { type LingeringRun, runLingeringCommand } from "./lingering/lingering-command.ts";
import { fileFinder, kafkaFinder, postgresFinder, s3Finder } from "./lingering/lingering-targets.ts";
import { runRescaleCommand } from "./rescale/rescale-command.ts";
import { runJobCommand } from "./run/run-command.ts";
import { S3_ENDPOINT_HELP } from "./s3-connection.ts";

const LINGERING_KINDS = "kafka, postgres, s3 or file";

/** The options every `exactly lingering` subcommand takes. */
function lingeringCommand(parent: Command, name: string, description: string): Command {
  return (
    parent
      .command(name)
      .description(description)
      .option(
        "--checkpoints <location>",
        "the job's checkpoint location (directory or s3://bucket/prefix): what its checkpoints pre-committed is spared",
      )
      .option("--s3-endpoint <url>", S3_ENDPOINT_HELP)
      // The same server as --s3-endpoint, under the name it had before every command called it so.
      .addOption(new Option("--checkpoints-s3-endpoint <url>", "deprecated: --s3-endpoint").hideHelp())
      .option("--older-than <seconds>", "only work older than this may be aborted", seconds)
      .option(
        "--abort",
        "abort what no checkpoint at --checkpoints pre-committed, after a confirmation (without --checkpoints it refuses and lists what it would abort)",
      )
      .option(
        "--abort-without-checkpoints",
        "abort everything listed without --checkpoints, accepting that work a completed checkpoint pre-committed is rolled back and that checkpoint's output lost",
      )
      .option("--yes", "with --abort: do not ask")
      .option("--json", "print the report as JSON")
  );
}

function lingeringRun(opts: Record<string, unknown>): LingeringRun {
  return {
    abort: opts.abort === true,
    abortWithoutCheckpoints: opts.abortWithoutCheckpoints === true,
    yes: opts.yes === true,
    json: opts.json === true,
    ...(typeof opts.checkpoints === "string" ? { checkpoints: opts.checkpoints } : {}),
    ...(typeof (opts.s3Endpoint ?? opts.checkpointsS3Endpoint) === "string"
      ? { s3Endpoint: String(opts.s3Endpoint ?? opts.checkpointsS3Endpoint) }
      : {}),
    ...(typeof opts.olderThan === "number" ? { olderThanSeconds: opts.olderThan } : {}),
  };
}

/** This package's version: src/ and dist/ both sit next to its package.json. */
function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
  return manifest.version;
}

/**
 * Exit codes of every command: 0 ok; 1 a check found a violation (records lost or duplicated,
 * work left open, a conformance scenario failed); 2 bad usage or configuration, and any error
 * that stopped the command; 3 only from `conformance`: nothing failed, but a scenario tested
 * nothing. Every usage error, commander's own (an unknown flag, a missing or refused value:
 * flag-parsers.ts) and every `ConfigurationError` (bad input: a flag's value, a file, a
 * missing server address), is one line on stderr that points to the command's `--help`, and
 * exit code 2 (see {@link main}).
 */
export function buildProgram(): Command {
  const program = new Command("exactly")
    .description("End-to-end exactly-once stream pipelines")
    // The version is the program's alone: `exactly demo -V` is an unknown option, as any other.
    .version(packageVersion(), "-V, --version", "print the version of @exactly/cli")
    // Commander exits 1 on a usage error; exit codes are main's to choose (set before the
    // subcommands are added: they copy it, and the help's configuration).
    .exitOverride()
    .configureHelp({ subcommandTerm })
    // A subcommand's flags are its own: `exactly demo kafka --records N` gives --records to
    // `kafka`, not to `demo`.
    .enablePositionalOptions();
  addDemoCommands(program);
  program
    .command("run")
    .description("run a job module: checkpoints, restarts, metrics, a status line; SIGTERM stops it gracefully")
    .argument(
      "<module>",
      "path of the module, whose export (--export) builds the StreamJob: see JobModule",
      existingFile,
    )
    .addOption(new Option("--export <name>", "the export that builds the job").default("default", "default"))
    .option("--metrics-port <p>", "serve the job's metrics in Prometheus format on this port (/metrics)", port)
    .addOption(
      new Option(
        "--metrics-host <host>",
        "the address the metrics server listens on (0.0.0.0: every interface)",
      ).default("127.0.0.1", "127.0.0.1"),
    )
    .addOption(
      new Option("--log-format <format>", "text, or json (one object per line)")
        .argParser(logFormat)
        .default("text", "text"),
    )
    .option(
      "--shard <k/N>",
      "run shard k of N: its key groups and splits, its own checkpoints and lease (or EXACTLY_SHARD=k/N)",
    )
    .option("--shards <N>", "run as one of N shards, k from a StatefulSet hostname name-k", integerAtLeast(1))
    .option(
      "--group <name>",
      "run this group of a job with a keyBy across shards: the stages between its repartition topics, with checkpoints of its own (or EXACTLY_GROUP)",
    )
    .option(
      "--lease-duration <seconds>",
      "the job's lease (its shard's, or its checkpoint location's): a successor takes over after this long unrenewed",
      positiveSeconds,
    )
    .option(
      "--allow-non-restored-state <uids>",
      "start without the checkpointed state of these sources or operators (comma-separated uids; a sink's state is never dropped)",
      uidList,
    )
    .action(async (module: string, opts) => {
      process.exitCode = await runJobCommand(module, opts);
    });
  program
    .command("inspect")
    .description("list a job's checkpoints: complete or not, size, source positions, pending transactions")
    .argument("<location>", "the checkpoint location: a directory, or s3://bucket/prefix")
    .option("--s3-endpoint <url>", `for s3:// locations: ${S3_ENDPOINT_HELP}`)
    .option("--json", "print the checkpoints as JSON")
    .action(async (location: string, opts) => {
      // A job run as groups: each group's folder is a job's location of its own.
      const groups = await inspectGroups(location, opts);
      if (groups.length > 0) {
        const byGroup: Record<string, unknown> = {};
        for (const group of groups) {
          const at = groupLocation(location, group);
          const sharded = await inspectShards(at, opts);
          const reports = sharded ? undefined : await inspectCheckpoints(at, opts);
          byGroup[group] = sharded ?? reports;
          if (!opts.json) {
            console.log(`group ${group}:`);
            console.log(sharded ? formatShards(at, sharded) : formatInspection(at, reports ?? []));
          }
        }
        if (opts.json) console.log(JSON.stringify({ groups: byGroup }, null, 2));
        return;
      }
      const sharded = await inspectShards(location, opts);
      if (sharded) {
        console.log(opts.json ? JSON.stringify(sharded, null, 2) : formatShards(location, sharded));
        return;
      }
      const reports = await inspectCheckpoints(location, opts);
      console.log(opts.json ? JSON.stringify(reports, null, 2) : formatInspection(location, reports));
      // 1: nothing to inspect there (formatInspection says where checkpoints usually are).
      if (reports.length === 0) process.exitCode = 1;
    });
  program
    .command("rescale")
    .description(
      "declare that a job run as shards is to run as <count> shards: the first process started as one of them moves the layout once the current shards stopped (without it, such a process is refused)",
    )
    .argument("<location>", "the checkpoint location: a directory, or s3://bucket/prefix")
    .argument("<count>", "the new number of shards (the current one withdraws a declaration)", integerAtLeast(1))
    .option("--s3-endpoint <url>", `for s3:// locations: ${S3_ENDPOINT_HELP}`)
    .option("--group <name>", "of a job run as groups: rescale this group (each group has shards of its own)")
    .action(async (location: string, count: number, opts) => {
      if (opts.group === undefined) {
        const groups = await inspectGroups(location, opts);
        if (groups.length > 0)
          throw new ConfigurationError(
            "--group",
            `the job at ${location} runs as the groups ${groups.join(", ")}, each with shards of its own: name the one to rescale`,
          );
      }
      const at = opts.group === undefined ? location : groupLocation(location, opts.group);
      console.log(await runRescaleCommand(at, count, opts));
    });
  const lingering = program
    .command("lingering")
    .description(
      "list the work a sink of one kind left open (transactions, prepared transactions, multipart uploads, in-progress files) that no checkpoint will commit; with --abort, end it",
    )
    .usage("<kafka|postgres|s3|file> [options]")
    // Without a kind, or with an unknown one: a usage error of one line, not the help.
    .argument("[kind]")
    .action((kind: string | undefined) => {
      throw new ConfigurationError(
        "exactly lingering",
        kind === undefined ? `needs a kind: ${LINGERING_KINDS}` : `unknown kind '${kind}': ${LINGERING_KINDS}`,
      );
    });
  // Exit codes: 0 nothing left open, 1 some work left open, 2 bad usage or configuration.
  lingeringCommand(lingering, "kafka", "open Kafka transactions of a transactional-id prefix")
    .option("--brokers <list>", "bootstrap servers (default: $EXACTLY_KAFKA_BROKERS)")
    .requiredOption("--prefix <prefix>", "the sink's transactionalIdPrefix")
    .action(async (opts) => {
      process.exitCode = await runLingeringCommand(await kafkaFinder(opts), lingeringRun(opts));
    });
  lingeringCommand(lingering, "postgres", "prepared transactions of a PostgresTwoPhaseSink")
    .option("--pg-url <url>", "the database (default: $EXACTLY_PG_URL)")
    .requiredOption("--sink <name>", "the sink's name in the database")
    .action(async (opts) => {
      process.exitCode = await runLingeringCommand(await postgresFinder(opts), lingeringRun(opts));
    });
  lingeringCommand(lingering, "s3", "open multipart uploads under an S3 file sink's prefix")
    .requiredOption("--bucket <name>", "the sink's bucket")
    .addOption(new Option("--prefix <prefix>", "the sink's key prefix").default("", "none, the whole bucket"))
    .action(async (opts) => {
      process.exitCode = await runLingeringCommand(await s3Finder(opts), lingeringRun(opts));
    });
  lingeringCommand(lingering, "file", "in-progress part files of an exactly-once local file sink")
    .requiredOption("--directory <dir>", "the sink's directory", existingDirectory)
    .option("--sink <name>", "the sink's name in the job (its parts are part-<name>-*)")
    .option("--part-prefix <prefix>", "the sink's partPrefix, when it set one")
    .action(async (opts) => {
      process.exitCode = await runLingeringCommand(await fileFinder(opts), lingeringRun(opts));
    });
  program
    .command("conformance")
    .description("run the conformance suite against a module exporting a sink's conformance definition")
    .argument("<module>", "path of the module (exports `definition`, or the name given by --export)", existingFile)
    .option("--full", "the long profile (more records, more chaos) instead of the CI profile")
    .option("--seed <s>", "seed of the plans (chaos, random kills): replays a failure", integer)
    .option("--only <scenarios>", ONLY_HELP)
    .addOption(new Option("--export <name>", "the export holding the definition").default("definition", "definition"))
    .option(
      "--repeat <n>",
      "run the selection n times with the same seed (a failure that timing decides)",
      integerAtLeast(1),
    )
    .option(
      "--workers <n>",
      "run every scenario's job on n worker threads (subtask i on thread i mod n; default the definition's workers, else 1)",
      integerAtLeast(1),
    )
    // Checked before the run: minutes of scenarios are not lost to a typo in the report's path.
    .option("--json <file>", "also write a machine-readable report there (- for stdout)", writableFile)
    .action(async (module: string, opts) => {
      // 1: a scenario failed; 3: none failed but one tested nothing in all its attempts.
      const outcome = await runConformanceCommand(module, opts);
      if (outcome === "failed") process.exitCode = 1;
      else if (outcome === "inconclusive") process.exitCode = 3;
    });
  // `exactly help <command>`, as commander's own, except that an unknown command is a usage
  // error of one line, not the whole help.
  program
    .helpCommand(false)
    .command("help")
    .description("display help for command")
    .argument("[command]")
    .action((name: string | undefined) => {
      if (name === undefined) program.help();
      const command = program.commands.find((c) => c.name() === name);
      if (!command) throw new ConfigurationError("exactly help", `unknown command '${name}'`);
      command.help();
    });
  return program;
}

/**
 * The top-level help's line for a command with subcommands names them: `lingering
 * <kafka|postgres|s3|file> [options]`, `demo [kafka] [options]` (demo runs alone too).
 */
function subcommandTerm(command: Command): string {
  const kinds = command.commands.map((c) => c.name()).filter((name) => name !== "help");
  if (kinds.length === 0) return new Help().subcommandTerm(command);
  const listed = kinds.join("|");
  // A command with an action of its own and no operand runs alone (demo); lingering's action
  // only refuses a missing or unknown kind.
  const runsAlone =
    (command as unknown as { _actionHandler: unknown })._actionHandler !== null &&
    command.registeredArguments.length === 0;
  return `${command.name()} ${runsAlone ? `[${listed}]` : `<${listed}>`} [options]`;
}

/** `exactly lingering kafka`, the way a user types the command. */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

/** The one line of a usage error: what is wrong, then where the command's flags are listed. */
function usageLine(message: string, command: Command): string {
  const first = message
    .trim()
    .replace(/^error: /, "")
    .split("\n")[0];
  // `exactly help <command>` is about the program's commands: its help lists them.
  const helped = command.name() === "help" && command.parent ? command.parent : command;
  return `error: ${first} (see \`${commandPath(helped)} --help\`)`;
}

/**
 * Makes every usage error one line pointing to the help of the command it was made on, in
 * place of commander's "error: …" (its help after the error is off). Returns the command a
 * ConfigurationError belongs to: the one running, as the hooks saw it.
 */
function oneLineUsageErrors(program: Command): () => Command {
  let running = program;
  const visit = (command: Command) => {
    command.configureOutput({ outputError: (text, write) => write(`${usageLine(text, command)}\n`) });
    command.hook("preSubcommand", (_, sub) => {
      running = sub;
    });
    for (const sub of command.commands) visit(sub);
  };
  visit(program);
  program.hook("preAction", (_, action) => {
    running = action;
  });
  return () => running;
}

export async function main(argv: readonly string[]): Promise<void> {
  const program = buildProgram();
  const running = oneLineUsageErrors(program);
  try {
    await program.parseAsync(argv as string[]);
  } catch (error) {
    // Commander has printed its one line already (or the help, or the version).
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode === 0 ? 0 : 2;
      return;
    }
    // Bad input: the message names the setting; no stack trace.
    if (error instanceof ConfigurationError) {
      console.error(usageLine(error.message, running()));
      process.exitCode = 2;
      return;
    }
    // Any other error of this repository stopped the command: its message, no stack trace.
    if (error instanceof ExactlyError) {
      console.error(`error: ${error.message}`);
      process.exitCode = 2;
      return;
    }
    throw error;
  }
}
