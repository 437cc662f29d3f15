// The demo's worker gets its configuration, which holds the targets' URLs and keys (a Postgres
// or Redis URL with its password, the S3 secret key), outside its command line: any local user
// reads every process's argv through ps and /proc/<pid>/cmdline.

import { readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runExactly } from "@exactly/testkit/run-cli";
import { afterEach, describe, expect, it, vi } from "vitest";

/** The command lines of this process's children, as another user sees them. */
async function childCommandLines(): Promise<string[]> {
  const lines: string[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, "utf8");
      // Fields after the command name, which is in parentheses and may hold spaces.
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (parent !== process.pid) continue;
      lines.push((await readFile(`/proc/${entry}/cmdline`, "utf8")).split("\0").join(" "));
    } catch {
      // The process ended while we looked.
    }
  }
  return lines;
}

describe("exactly demo keeps its configuration off the worker's command line", () => {
  const outs: string[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
    for (const out of outs.splice(0)) await rm(out, { recursive: true, force: true });
  });

  it("no worker's argv holds any of the configuration", async () => {
    const marker = `config-marker-${process.pid}-${Date.now()}`;
    const out = join(tmpdir(), marker);
    outs.push(out);
    const seen: string[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        for (const line of await childCommandLines()) if (line.includes("demo-worker")) seen.push(line);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    try {
      const printed = await runExactly(
        "demo",
        "--out",
        out,
        "--records",
        "40000",
        "--kills",
        "0",
        "--rate",
        "20000",
        "--json",
      );
      expect(JSON.parse(printed.at(-1) as string)).toMatchObject({ records: 40_000, committed: 40_000, lost: 0 });
    } finally {
      watching = false;
      await watcher;
    }
    // Seeing no worker at all would test nothing.
    expect(seen.length).toBeGreaterThan(0);
    for (const line of seen) expect(line).not.toContain(marker);
  });
});
