// What `exactly demo` refuses before it makes anything: a count out of its range (alone, or
// --shards × --parallelism above the job's key groups), a --json file that cannot be written,
// and a run whose output would not fit on the disk. Each is one line naming the flag and what
// it allows, exit code 2, and nothing made under the temp directory, where the demo's output
// (and so every child process) would come first. The demo runs in the test's process (runMain);
// a refusal that does not come is a run, which the test's timeout ends as a failure.

import { mkdtemp, readdir, readFile, rm, statfs } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runMain } from "@exactly/testkit/run-cli";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

// The disk check reads the free space with statfs; one test gives it a small disk.
vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>();
  return { ...real, statfs: vi.fn(real.statfs) };
});
const realStatfs = (await vi.importActual<typeof import("node:fs/promises")>("node:fs/promises")).statfs;

/** Generous: a refusal takes milliseconds, and a run that was not refused must not pass. */
const HANG_MS = 20_000;

let temp: string;
let savedTmpdir: string | undefined;

beforeEach(async () => {
  // The demo's temp output goes under os.tmpdir(), which reads TMPDIR at each call.
  temp = await mkdtemp(join(tmpdir(), "exactly-demo-refusals-"));
  savedTmpdir = process.env.TMPDIR;
  process.env.TMPDIR = temp;
});

afterEach(async () => {
  if (savedTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmpdir;
  vi.mocked(statfs).mockImplementation(realStatfs);
  vi.restoreAllMocks();
  await rm(temp, { recursive: true, force: true });
});

/** The demo refused `args`: exit 2, one line naming what `expected` says, nothing made. */
async function expectRefused(args: readonly string[], expected: RegExp): Promise<string> {
  const run = await runMain(["demo", ...args]);
  expect(run.code, run.stderr).toBe(2);
  expect(run.stdout).toBe("");
  const lines = run.stderr.trimEnd().split("\n");
  expect(lines, run.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(expected);
  expect(await readdir(temp)).toEqual([]);
  return lines[0] as string;
}

describe("exactly demo refuses a count out of range in one line, before anything runs", () => {
  // `--rate 1`: were a case not refused, the run it starts would cost next to nothing.
  const cases: ReadonlyArray<readonly [string, string[], RegExp]> = [
    ["--parallelism above the key groups", ["--parallelism", "129", "--rate", "1"], /--parallelism.*1 to 128/],
    [
      "--shards 1000",
      ["--shards", "1000", "--rate", "1"],
      /--shards: must be 1 to 64 with --parallelism 2 \(shards × --parallelism at most 128/,
    ],
    [
      "--shards × --parallelism above the key groups",
      ["--shards", "3", "--parallelism", "64", "--rate", "1"],
      /--shards: must be 1 to 2 with --parallelism 64/,
    ],
    [
      "a --parallelism no shard count fits (the rescale from 1 runs 2)",
      ["--shards", "1", "--parallelism", "100", "--rate", "1"],
      /--shards: no shard count fits --parallelism 100 .*give --parallelism 64 or less/,
    ],
    ["--records above 32 bits", ["--records", "2147483648", "--rate", "1"], /--records.*1 to 2147483647/],
    ["--kills above the limit", ["--kills", "1001", "--records", "1000", "--rate", "1"], /--kills.*0 to 1000/],
    ["--kills of demo kafka above the limit", ["kafka", "--kills", "1001"], /--kills.*0 to 1000/],
    [
      "--metrics-port with --shards (one port, several processes)",
      ["--shards", "2", "--metrics-port", "9464", "--rate", "1"],
      /--metrics-port: one port cannot serve the 2 shard processes of --shards/,
    ],
  ];
  it.each(cases)("%s", { timeout: HANG_MS }, async (_case, args, expected) => {
    await expectRefused(args, expected);
  });
});

describe("exactly demo --json <file>", () => {
  it("refuses a file in a directory that does not exist, before the run", { timeout: HANG_MS }, async () => {
    const file = join(temp, "nope", "summary.json");
    await expectRefused(["--json", file, "--records", "1000", "--rate", "1"], /--json.*no such directory/);
  });

  it("refuses a directory", { timeout: HANG_MS }, async () => {
    const dir = await mkdtemp(join(savedTmpdir ?? "/tmp", "exactly-demo-json-dir-"));
    try {
      await expectRefused(["--json", dir, "--records", "1000", "--rate", "1"], /--json.*a directory, not a file/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("writes the summary there, and prints it as text", { timeout: 60_000 }, async () => {
    const dir = await mkdtemp(join(savedTmpdir ?? "/tmp", "exactly-demo-json-"));
    try {
      const file = join(dir, "summary.json");
      const run = await runMain(["demo", "--records", "2000", "--kills", "0", "--json", file]);
      expect(run.code ?? 0, run.stderr).toBe(0);
      expect(JSON.parse(await readFile(file, "utf8"))).toMatchObject({ committed: 2000, lost: 0, ok: true });
      expect(run.stdout).toContain("OK: every record committed exactly once");
      expect(run.stdout).not.toContain('"committed"');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("exactly demo refuses a run whose output would not fit on the disk", () => {
  it("names --records and --rate, the space needed and free, and the records that fit", {
    timeout: HANG_MS,
  }, async () => {
    // A disk with 200 MB free; 10,000,000 records of about 36 bytes need 360 MB.
    vi.mocked(statfs).mockResolvedValue({ bavail: 50_000, bsize: 4096 } as Awaited<ReturnType<typeof statfs>>);
    const line = await expectRefused(
      ["--records", "10000000", "--rate", "1", "--kills", "0"],
      /^error: --records: 10000000 records at --rate 1 need about 0\.4 GB at .* and 0\.2 GB is free there: at most (\d+) records fit/,
    );
    const fit = Number(/at most (\d+) records fit/.exec(line)?.[1]);
    expect(fit).toBeGreaterThan(3_000_000);
    expect(fit).toBeLessThan(4_000_000);
  });
});
