// Every command with a table of bad inputs (negative, zero, fractional, a missing value, an
// unknown flag, a wrong path, a server nothing listens on): each is refused with exit code 2,
// one line on stderr that points to the command's --help, nothing on stdout, and no hang (each
// case is bounded; a refusal comes before anything runs, so each ends in milliseconds). The
// command runs in the test's process, through main() as bin/exactly.js calls it (runMain), so
// the table costs no process starts; exit-codes.test.ts checks the exit code of a real process.

import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runMain as exactly } from "@exactly/testkit/run-cli";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";

/** A case still running after this is hanging: it fails. */
const BOUND_MS = 10_000;
/** A port nothing listens on: a stopped server, as a client sees it. */
const NOTHING_LISTENS = "127.0.0.1:1";

afterEach(() => {
  vi.restoreAllMocks();
});

let file: string;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "exactly-bad-input-"));
  file = join(dir, "a-file.txt");
  await writeFile(file, "not a module, not a directory\n");
});

/** [command, bad input] → arguments; the paths are made in beforeAll. */
const table: ReadonlyArray<readonly [string, string, () => string[]]> = [
  ["exactly", "unknown command", () => ["nope"]],
  ["exactly", "unknown flag", () => ["--bogus"]],
  ["exactly", "help of an unknown command", () => ["help", "nope"]],
  ["demo", "negative --records", () => ["demo", "--records", "-1"]],
  ["demo", "zero --records", () => ["demo", "--records", "0"]],
  ["demo", "fractional --records", () => ["demo", "--records", "1.5"]],
  ["demo", "missing --records value", () => ["demo", "--records"]],
  ["demo", "negative --kills", () => ["demo", "--kills", "-1"]],
  ["demo", "negative --rate", () => ["demo", "--rate", "-1"]],
  ["demo", "fractional --rate", () => ["demo", "--rate", "0.5"]],
  ["demo", "zero --workers", () => ["demo", "--workers", "0"]],
  ["demo", "zero --parallelism", () => ["demo", "--parallelism", "0"]],
  ["demo", "fractional --seed", () => ["demo", "--seed", "1.5"]],
  ["demo", "--metrics-port out of range", () => ["demo", "--metrics-port", "70000"]],
  ["demo", "--parallelism above the key groups", () => ["demo", "--parallelism", "129"]],
  ["demo", "--shards above the key groups", () => ["demo", "--shards", "1000"]],
  ["demo", "--records above 32 bits", () => ["demo", "--records", "2147483648"]],
  ["demo", "--kills above the limit", () => ["demo", "--kills", "1001"]],
  ["demo", "--metrics-port with --shards", () => ["demo", "--shards", "2", "--metrics-port", "9464"]],
  ["demo", "--json in a directory that does not exist", () => ["demo", "--json", join(dir, "nope", "s.json")]],
  ["demo", "--json at a directory", () => ["demo", "--json", dir]],
  ["demo", "unknown --sink", () => ["demo", "--sink", "nope"]],
  ["demo", "unknown flag", () => ["demo", "--bogus"]],
  ["demo", "-V, the program's flag", () => ["demo", "-V"]],
  ["demo", "--out at a file", () => ["demo", "--out", file, "--records", "10"]],
  [
    "demo",
    "a stopped Postgres",
    () => ["demo", "--sink", "postgres", "--pg-url", `postgres://u@${NOTHING_LISTENS}/db`],
  ],
  ["demo", "a stopped Redis", () => ["demo", "--sink", "redis", "--redis-url", `redis://${NOTHING_LISTENS}`]],
  [
    "demo",
    "a stopped S3 server",
    () => ["demo", "--sink", "s3", "--s3-endpoint", `http://${NOTHING_LISTENS}`, "--bucket", "b"],
  ],
  ["demo kafka", "zero --records", () => ["demo", "kafka", "--records", "0"]],
  ["demo kafka", "a stopped broker", () => ["demo", "kafka", "--brokers", NOTHING_LISTENS]],
  ["demo kafka", "negative --kills", () => ["demo", "kafka", "--kills", "-2"]],
  ["demo kafka", "--kills above the limit", () => ["demo", "kafka", "--kills", "1001"]],
  ["demo kafka", "a flag of the demo job", () => ["demo", "kafka", "--out", dir]],
  ["demo kafka", "no broker", () => ["demo", "kafka"]],
  ["run", "missing module", () => ["run"]],
  ["run", "module that does not exist", () => ["run", join(dir, "nope.ts")]],
  ["run", "negative --metrics-port", () => ["run", file, "--metrics-port", "-1"]],
  ["run", "unknown --log-format", () => ["run", file, "--log-format", "yaml"]],
  ["run", "missing --export value", () => ["run", file, "--export"]],
  ["run", "unknown flag", () => ["run", file, "--bogus"]],
  ["run", "a shard that does not exist", () => ["run", file, "--shard", "2/2"]],
  ["run", "a shard not written k/N", () => ["run", file, "--shard", "1"]],
  ["run", "zero --shards", () => ["run", file, "--shards", "0"]],
  ["run", "--shard and --shards together", () => ["run", file, "--shard", "0/2", "--shards", "2"]],
  ["run", "zero --lease-duration", () => ["run", file, "--shard", "0/2", "--lease-duration", "0"]],
  ["inspect", "missing location", () => ["inspect"]],
  ["inspect", "location that does not exist", () => ["inspect", join(dir, "nope")]],
  ["inspect", "location at a file", () => ["inspect", file]],
  ["inspect", "unknown flag", () => ["inspect", dir, "--bogus"]],
  [
    "inspect",
    "an s3:// location on a stopped server",
    () => ["inspect", "s3://b/p", "--s3-endpoint", `http://${NOTHING_LISTENS}`],
  ],
  ["rescale", "missing count", () => ["rescale", dir]],
  ["rescale", "zero count", () => ["rescale", dir, "0"]],
  ["rescale", "location that does not exist", () => ["rescale", join(dir, "nope"), "2"]],
  ["rescale", "a location never run as shards", () => ["rescale", dir, "2"]],
  ["lingering", "no kind", () => ["lingering"]],
  ["lingering", "unknown kind", () => ["lingering", "nope"]],
  ["lingering kafka", "no --brokers", () => ["lingering", "kafka", "--prefix", "p"]],
  ["lingering kafka", "a stopped broker", () => ["lingering", "kafka", "--brokers", NOTHING_LISTENS, "--prefix", "p"]],
  ["lingering kafka", "negative --older-than", () => ["lingering", "kafka", "--prefix", "p", "--older-than", "-1"]],
  ["lingering kafka", "missing --prefix", () => ["lingering", "kafka", "--brokers", NOTHING_LISTENS]],
  [
    "lingering postgres",
    "a stopped server",
    () => ["lingering", "postgres", "--pg-url", `postgres://u@${NOTHING_LISTENS}/db`, "--sink", "s"],
  ],
  ["lingering postgres", "no --pg-url", () => ["lingering", "postgres", "--sink", "s"]],
  [
    "lingering s3",
    "a stopped server",
    () => ["lingering", "s3", "--s3-endpoint", `http://${NOTHING_LISTENS}`, "--bucket", "b"],
  ],
  ["lingering s3", "missing --bucket", () => ["lingering", "s3"]],
  ["lingering file", "directory that does not exist", () => ["lingering", "file", "--directory", join(dir, "nope")]],
  ["lingering file", "no --sink", () => ["lingering", "file", "--directory", dir]],
  [
    "lingering file",
    "--checkpoints that do not exist",
    () => ["lingering", "file", "--directory", dir, "--sink", "s", "--checkpoints", join(dir, "nope")],
  ],
  ["conformance", "missing module", () => ["conformance"]],
  ["conformance", "module that does not exist", () => ["conformance", join(dir, "nope.ts")]],
  ["conformance", "zero --repeat", () => ["conformance", file, "--repeat", "0"]],
  ["conformance", "zero --workers", () => ["conformance", file, "--workers", "0"]],
  ["conformance", "--json in a missing directory", () => ["conformance", file, "--json", "/no/such/dir/report.json"]],
  ["conformance", "fractional --seed", () => ["conformance", file, "--seed", "0.5"]],
];

describe("every command refuses bad input: exit 2, one line pointing to --help, no hang", () => {
  it.each(table)("%s: %s", { timeout: BOUND_MS }, async (command, _input, args) => {
    const run = await exactly(args());
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe("");
    const lines = run.stderr.trimEnd().split("\n");
    expect(lines, run.stderr).toHaveLength(1);
    const help = command === "exactly" ? "exactly --help" : `exactly ${command} --help`;
    expect(lines[0]).toMatch(/^error: /);
    expect(lines[0]?.endsWith(`(see \`${help}\`)`), lines[0]).toBe(true);
  });
});
