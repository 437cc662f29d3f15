// The `exactly` command as a user's shell sees it: its version, and exit code 2 for bad usage
// (commander's own errors included, which it would end with 1) and bad configuration, so 1
// keeps meaning "a check found a violation".

import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const cli = fileURLToPath(new URL("../../../test/e2e/fixtures/exactly-cli.ts", import.meta.url));

function exactly(...args: string[]) {
  const run = spawnSync(process.execPath, ["--conditions=@exactly/source", cli, ...args], { encoding: "utf8" });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe("exactly's exit codes", () => {
  it("--version prints the package's version and exits 0", async () => {
    const manifest = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8"));
    const run = exactly("--version");
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe(manifest.version);
  });

  it("an unknown option or a bad value exits 2, with commander's message", () => {
    const unknown = exactly("demo", "--no-such-option");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown option '--no-such-option'");
    const bad = exactly("demo", "--records", "many");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("not an integer: many");
  });

  it("a bad setting exits 2 naming it: --out at a plain file", async () => {
    const file = join(await mkdtemp(join(tmpdir(), "exactly-exit-")), "out.txt");
    await writeFile(file, "a file\n");
    const run = exactly("demo", "--out", file, "--records", "100");
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`--out: ${file} is a file, not a directory`);
  });

  it("a guarantee that the checkpointing cannot keep exits 2 naming the setting", () => {
    const run = exactly("demo", "--checkpointing", "at-least-once", "--guarantee", "exactly-once", "--records", "100");
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--checkpointing: at-least-once checkpointing cannot keep --guarantee exactly-once");
    const bad = exactly("demo", "--checkpointing", "aligned", "--records", "100");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--checkpointing: must be exactly-once or at-least-once, got aligned");
  });

  it("a flag of another target exits 2 naming it, before anything runs", () => {
    const other = exactly("demo", "--pg-url", "postgres://nowhere", "--records", "100");
    expect(other.code).toBe(2);
    expect(other.stderr).toContain("--pg-url: only applies to --sink postgres");
    const kafkaOnly = exactly("demo", "--sink", "s3", "--require-kcat");
    expect(kafkaOnly.code).toBe(2);
    expect(kafkaOnly.stderr).toContain("--require-kcat: only applies to exactly demo kafka");
    const notKafka = exactly("demo", "kafka", "--out", "/tmp/x");
    expect(notKafka.code).toBe(2);
    expect(notKafka.stderr).toContain("unknown option '--out'");
  });

  it("exactly demo --kafka still parses, says it is deprecated, and names the demo job's flags it refuses", () => {
    const run = exactly("demo", "--kafka", "--out", "/tmp/x", "--guarantee", "at-least-once");
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("exactly demo --kafka is deprecated: run exactly demo kafka");
    expect(run.stderr).toContain("--out, --guarantee only applies to the demo job, not --kafka");
  });
});
