import { readFileSync } from "node:fs";
import { ConfigurationError } from "@exactly/core";
import { Command, CommanderError } from "commander";
import { ONLY_HELP, runConformanceCommand } from "./conformance/conformance-command.ts";
import { addDemoCommands } from "./demo/demo-cli.ts";
import { integer, logFormat, port, seconds } from "./flag-parsers.ts";
import { formatInspection, inspectCheckpoints } from "./inspect/inspect-command.ts";
import { type LingeringRun, runLingeringCommand } from "./lingering/lingering-command.ts";
import { fileFinder, kafkaFinder, postgresFinder, s3Finder } from "./lingering/lingering-targets.ts";
import { runJobCommand } from "./run/run-command.ts";

/** The options every `exactly lingering` subcommand takes. */
function lingeringCommand(parent: Command, name: string, description: string): Command {
  return parent
    .command(name)
    .description(description)
    .option(
      "--checkpoints <location>",
      "the job's checkpoint location (directory or s3://bucket/prefix): what its checkpoints pre-committed is spared",
    )
    .option(
      "--checkpoints-s3-endpoint <url>",
      "for an s3:// checkpoint location: the server (default: $EXACTLY_S3_ENDPOINT, else AWS)",
    )
    .option("--older-than <seconds>", "only work older than this may be aborted", seconds)
    .option(
      "--abort",
      "abort what no checkpoint at --checkpoints pre-committed, after a confirmation (without --checkpoints it refuses and lists what it would abort)",
      false,
    )
    .option(
      "--abort-without-checkpoints",
      "abort everything listed without --checkpoints, accepting that work a completed checkpoint pre-committed is rolled back and that checkpoint's output lost",
      false,
    )
    .option("--yes", "with --abort: do not ask", false)
    .option("--json", "print the report as JSON", false);
}

function lingeringRun(opts: Record<string, unknown>): LingeringRun {
  return {
    abort: opts.abort === true,
    abortWithoutCheckpoints: opts.abortWithoutCheckpoints === true,
    yes: opts.yes === true,
    json: opts.json === true,
    ...(typeof opts.checkpoints === "string" ? { checkpoints: opts.checkpoints } : {}),
    ...(typeof (opts.checkpointsS3Endpoint ?? opts.s3Endpoint) === "string"
      ? { s3Endpoint: String(opts.checkpointsS3Endpoint ?? opts.s3Endpoint) }
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
 * nothing. Commander's own usage errors, and every `ConfigurationError` (bad input: a flag's
 * value, a file, a missing server address), are turned into 2 in {@link main}.
 */
export function buildProgram(): Command {
  const program = new Command("exactly")
    .description("End-to-end exactly-once stream pipelines")
    .version(packageVersion(), "-V, --version", "print the version of @exactly/cli")
    .showHelpAfterError()
    // Commander exits 1 on a usage error; exit codes are main's to choose (set before the
    // subcommands are added: they copy it).
    .exitOverride()
    // A subcommand's flags are its own: `exactly demo kafka --records N` gives --records to
    // `kafka`, not to `demo`.
    .enablePositionalOptions();
  addDemoCommands(program);
  program
    .command("run")
    .description("run a job module: checkpoints, restarts, metrics, a status line; SIGTERM stops it gracefully")
    .argument("<module>", "path of the module; its export (default `default`) builds the StreamJob, see JobModule")
    .option("--export <name>", "the export that builds the job", "default")
    .option("--metrics-port <p>", "serve the job's metrics in Prometheus format on this port (/metrics)", port)
    .option("--log-format <format>", "text, or json (one object per line)", logFormat, "text")
    .option(
      "--shard <k/N>",
      "run shard k of N: its key groups and splits, its own checkpoints and lease (or EXACTLY_SHARD=k/N)",
    )
    .option("--shards <N>", "run as one of N shards, k from a StatefulSet hostname name-k", integer)
    .option(
      "--lease-duration <seconds>",
      "a sharded job's lease: a successor takes the shard after this long unrenewed",
      seconds,
    )
    .action(async (module: string, opts) => {
      process.exitCode = await runJobCommand(module, opts);
    });
  program
    .command("inspect")
    .description("list a job's checkpoints: complete or not, size, source positions, pending transactions")
    .argument("<location>", "the checkpoint location: a directory, or s3://bucket/prefix")
    .option("--s3-endpoint <url>", "for s3:// locations: the server (default: $EXACTLY_S3_ENDPOINT, else AWS)")
    .option("--json", "print the checkpoints as JSON", false)
    .action(async (location: string, opts) => {
      const reports = await inspectCheckpoints(location, opts);
      console.log(opts.json ? JSON.stringify(reports, null, 2) : formatInspection(location, reports));
    });
  const lingering = program
    .command("lingering")
    .description(
      "list the work a sink left open (transactions, prepared transactions, multipart uploads, in-progress files) that no checkpoint will commit; --abort ends it",
    );
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
    .option("--prefix <prefix>", "the sink's key prefix", "")
    .option("--s3-endpoint <url>", "the S3-compatible server (default: $EXACTLY_S3_ENDPOINT, else AWS)")
    .action(async (opts) => {
      process.exitCode = await runLingeringCommand(await s3Finder(opts), lingeringRun(opts));
    });
  lingeringCommand(lingering, "file", "in-progress part files of an exactly-once local file sink")
    .requiredOption("--directory <dir>", "the sink's directory")
    .option("--sink <name>", "the sink's name in the job (its parts are part-<name>-*)")
    .option("--part-prefix <prefix>", "the sink's partPrefix, when it set one")
    .action(async (opts) => {
      process.exitCode = await runLingeringCommand(await fileFinder(opts), lingeringRun(opts));
    });
  program
    .command("conformance")
    .description("run the conformance suite against a module exporting a sink's conformance definition")
    .argument("<module>", "path of the module (exports `definition`, or the name given by --export)")
    .option("--full", "the long profile (more records, more chaos) instead of the CI profile", false)
    .option("--seed <s>", "seed of the plans (chaos, random kills): replays a failure", integer)
    .option("--only <scenarios>", ONLY_HELP)
    .option("--export <name>", "the export holding the definition", "definition")
    .option("--repeat <n>", "run the selection n times with the same seed (a failure that timing decides)", integer)
    .option("--json <file>", "also write a machine-readable report there (- for stdout)")
    .action(async (module: string, opts) => {
      // 1: a scenario failed; 3: none failed but one tested nothing in all its attempts.
      const outcome = await runConformanceCommand(module, opts);
      if (outcome === "failed") process.exitCode = 1;
      else if (outcome === "inconclusive") process.exitCode = 3;
    });
  return program;
}

export async function main(argv: readonly string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv as string[]);
  } catch (error) {
    // Commander has printed its message (or the help, or the version) already.
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode === 0 ? 0 : 2;
      return;
    }
    // Bad input: the message names the setting; no stack trace.
    if (error instanceof ConfigurationError) {
      console.error(error.message);
      process.exitCode = 2;
      return;
    }
    throw error;
  }
}
