// `exactly lingering postgres` against the real server, on a PostgresTwoPhaseSink job killed
// (SIGKILL at an armed fault point) and never restarted: its prepared transaction outlives
// the process. Killed after the checkpoint is durable, the checkpoint holds it pre-committed
// and the tool spares it when given the job's checkpoints; killed right after PREPARE, before
// the checkpoint's state was written, no checkpoint references it and --abort rolls it back.

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigurationError, FileSystemCheckpointStorage } from "@exactly/core";
import type { LingeringJson } from "@exactly/testkit/cli-output";
import { pgUrl } from "@exactly/testkit/endpoints";
import { runExactly } from "@exactly/testkit/run-cli";
import { runFixture } from "@exactly/testkit/run-fixture";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { TwoPhaseJobConfig } from "./fixtures/two-phase-job.ts";
import {
  createRecordsTable,
  dropTable,
  preparedUnder,
  rollbackPreparedUnder,
  tableNameFor,
  withClient,
} from "./helpers.ts";

const fixture = fileURLToPath(new URL("./fixtures/two-phase-job.ts", import.meta.url));

/** Runs the job until the armed fault point kills it; returns its checkpoint directory. */
async function killedJob(config: Omit<TwoPhaseJobConfig, "checkpoints">, fault: string): Promise<string> {
  const checkpoints = await mkdtemp(join(tmpdir(), "exactly-lingering-pg-"));
  const run = await runFixture(fixture, { PG_JOB: JSON.stringify({ ...config, checkpoints }), EXACTLY_FAULT: fault });
  expect(run.signal, run.stderr.slice(-2000)).toBe("SIGKILL");
  return checkpoints;
}

async function lingering(...args: string[]): Promise<{ report: LingeringJson; exitCode: unknown }> {
  process.exitCode = undefined;
  const printed = await runExactly("lingering", "postgres", "--pg-url", pgUrl(), "--json", ...args);
  const exitCode = process.exitCode;
  process.exitCode = undefined;
  vi.restoreAllMocks();
  return { report: JSON.parse(printed.join("\n")) as LingeringJson, exitCode };
}

/** The gids the latest complete checkpoint's sink state holds as pre-committed. */
async function pendingGids(checkpoints: string): Promise<string[]> {
  const restored = await new FileSystemCheckpointStorage(checkpoints).loadLatest();
  const gids: string[] = [];
  for (const [key, state] of restored?.states ?? []) {
    if (!key.startsWith("pg-out/")) continue;
    for (const p of (state as { pending: Array<{ txn: { gid?: string } }> }).pending)
      if (p.txn.gid) gids.push(p.txn.gid);
  }
  return gids;
}

describe("exactly lingering postgres", () => {
  const tables: string[] = [];
  const sinks: string[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
    for (const sink of sinks.splice(0)) await rollbackPreparedUnder(pgUrl(), sink);
    for (const table of tables.splice(0)) await dropTable(pgUrl(), table);
  });

  async function setUp(label: string) {
    const table = tableNameFor();
    const sinkName = `${label}-${table}`;
    tables.push(table);
    sinks.push(sinkName);
    await createRecordsTable(pgUrl(), table);
    return { url: pgUrl(), table, sinkName };
  }

  it("spares what a durable checkpoint pre-committed; without --checkpoints --abort refuses, listing it, and --abort-without-checkpoints rolls it back", async () => {
    const config = await setUp("durable");
    const checkpoints = await killedJob(config, "after-checkpoint-durable@3");
    // Every transaction still prepared is one the checkpoint pre-committed (an earlier one
    // may have been committed between the checkpoint's snapshot and the kill).
    const pending = await pendingGids(checkpoints);
    const prepared = await preparedUnder(config.url, config.sinkName);
    expect(prepared.length, "the killed job left a prepared transaction").toBeGreaterThan(0);
    for (const gid of prepared) expect(pending).toContain(gid);

    const listed = await lingering("--sink", config.sinkName, "--checkpoints", checkpoints, "--abort", "--yes");
    expect(listed.exitCode, "it is left open").toBe(1);
    expect(listed.report.items.map((i) => [i.id, i.status, i.aborted])).toEqual(
      prepared.map((gid) => [gid, "pre-committed", false]),
    );
    for (const item of listed.report.items) expect(item.ageSeconds).not.toBeNull();
    expect(await preparedUnder(config.url, config.sinkName)).toEqual(prepared);

    // Without --checkpoints nothing tells the pre-committed apart: --abort refuses, naming them.
    const refused = await lingering("--sink", config.sinkName, "--abort", "--yes").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(ConfigurationError);
    expect(String(refused)).toContain("--abort-without-checkpoints");
    for (const gid of prepared) expect(String(refused)).toContain(gid);
    expect(await preparedUnder(config.url, config.sinkName)).toEqual(prepared);

    const all = await lingering("--sink", config.sinkName, "--abort-without-checkpoints", "--yes");
    expect(all.exitCode).toBe(0);
    expect(all.report.items.map((i) => i.aborted)).toEqual(prepared.map(() => true));
    expect(await preparedUnder(config.url, config.sinkName)).toEqual([]);
  });

  it("aborts what was prepared after the last checkpoint, which none references", async () => {
    const config = await setUp("prepared");
    const checkpoints = await killedJob(config, "after-pre-commit@3");
    const prepared = await preparedUnder(config.url, config.sinkName);
    const pending = await pendingGids(checkpoints);
    const unreferenced = prepared.filter((gid) => !pending.includes(gid));
    expect(unreferenced.length, "the transaction prepared at the kill").toBe(1);

    const before = await lingering("--sink", config.sinkName, "--checkpoints", checkpoints);
    expect(before.exitCode).toBe(1);
    expect(before.report.items.filter((i) => i.status === "unreferenced").map((i) => i.id)).toEqual(unreferenced);
    // --older-than a day: nothing is old enough to abort.
    const young = await lingering(
      "--sink",
      config.sinkName,
      "--checkpoints",
      checkpoints,
      "--older-than",
      "86400",
      "--abort",
      "--yes",
    );
    expect(young.report.items.some((i) => i.aborted)).toBe(false);
    expect(await preparedUnder(config.url, config.sinkName)).toEqual(prepared);

    const aborted = await lingering("--sink", config.sinkName, "--checkpoints", checkpoints, "--abort", "--yes");
    expect(aborted.report.items.filter((i) => i.aborted).map((i) => i.id)).toEqual(unreferenced);
    expect(await preparedUnder(config.url, config.sinkName)).toEqual(prepared.filter((g) => !unreferenced.includes(g)));
    // A mistyped checkpoint location is refused, not read as "nothing is referenced".
    await expect(
      lingering("--sink", config.sinkName, "--checkpoints", await mkdtemp(join(tmpdir(), "exactly-empty-"))),
    ).rejects.toThrow("holds no checkpoint");
  });

  it("--abort without --checkpoints rolls nothing back and lists what it would; --abort-without-checkpoints does", async () => {
    const { url, table, sinkName } = await setUp("noflag");
    const gids = [`${sinkName}:0:1`, `${sinkName}:1:1`];
    for (const [i, gid] of gids.entries()) {
      await withClient(url, async (c) => {
        await c.query("BEGIN");
        await c.query(`INSERT INTO "${table}" (id, key, version) VALUES ($1, 'k', 0)`, [i]);
        await c.query(`PREPARE TRANSACTION '${gid}'`);
      });
    }
    const refused = await lingering("--sink", sinkName, "--abort", "--yes").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(ConfigurationError);
    expect((refused as ConfigurationError).message).toContain("--abort-without-checkpoints");
    for (const gid of gids) expect((refused as ConfigurationError).message).toContain(gid);
    expect(await preparedUnder(url, sinkName)).toEqual(gids);

    // Listing alone is not refused.
    const listed = await lingering("--sink", sinkName);
    expect(listed.exitCode).toBe(1);
    expect(listed.report.items.map((i) => i.id).sort()).toEqual(gids);

    const aborted = await lingering("--sink", sinkName, "--abort-without-checkpoints", "--yes");
    expect(aborted.exitCode).toBe(0);
    expect(aborted.report.items.map((i) => [i.id, i.aborted]).sort()).toEqual(gids.map((g) => [g, true]));
    expect(await preparedUnder(url, sinkName)).toEqual([]);
  });
});
