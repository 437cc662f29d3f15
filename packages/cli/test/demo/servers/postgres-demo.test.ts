// `exactly demo --sink postgres` against the real server: the demo job under SIGKILL appends
// into a table it creates, reads it back itself, and reports exactly once with no prepared
// transaction left, for both exactly-once sinks; at-least-once with kills shows duplicates.

import { pgUrl } from "@exactly/testkit/endpoints";
import { runExactly } from "@exactly/testkit/run-cli";
import { afterEach, describe, expect, it, vi } from "vitest";
import { dropTable, tableNameFor, withClient } from "../../../../../connectors/postgres/test/helpers.ts";

const demo = (table: string, ...args: string[]) =>
  runExactly(
    "demo",
    "--sink",
    "postgres",
    "--pg-url",
    pgUrl(),
    "--table",
    table,
    "--records",
    "30000",
    "--kills",
    "2",
    "--seed",
    "11",
    "--json",
    ...args,
  );

describe("exactly demo --sink postgres", () => {
  const tables: string[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
    for (const table of tables.splice(0)) await dropTable(pgUrl(), table);
  });

  it.each(["two-phase", "write-ahead"])("%s: every record exactly once, nothing left prepared", async (kind) => {
    const table = tableNameFor();
    tables.push(table);
    const printed = await demo(table, "--pg-sink", kind);
    const summary = JSON.parse(printed.at(-1) as string);
    expect(summary).toMatchObject({
      sink: "postgres",
      table,
      pgSink: kind,
      records: 30_000,
      committed: 30_000,
      lost: 0,
      duplicated: 0,
      kills: 2,
      preparedLeft: 0,
      ok: true,
    });
    expect(process.exitCode).toBeUndefined();
    // What the demo read is what a fresh session sees.
    const count = await withClient(pgUrl(), async (c) =>
      Number((await c.query(`SELECT count(*) AS n FROM "${table}"`)).rows[0]?.n),
    );
    expect(count).toBe(30_000);
  });

  it("at-least-once with kills shows duplicates, and says so", async () => {
    const table = tableNameFor();
    tables.push(table);
    // The run: checkpoints of ~12,500 records, so rows are written out between two barriers and a kill replays them.
    const printed = await demo(table, "--guarantee", "at-least-once", "--records", "300000", "--kills", "5");
    const summary = JSON.parse(printed.at(-1) as string);
    expect(summary).toMatchObject({ records: 300_000, lost: 0, ok: false });
    expect(summary.duplicated).toBeGreaterThan(0);
    expect(process.exitCode).toBe(1);
  });

  it("refuses a table of that name that the demo did not create", async () => {
    const table = tableNameFor();
    tables.push(table);
    await withClient(pgUrl(), (c) => c.query(`CREATE TABLE "${table}" (id bigint)`));
    await expect(demo(table)).rejects.toThrow(`--table: a table ${table} exists that the demo did not create`);
  });
});
