// A Postgres restart (fast shutdown, then start), or a SIGKILL of the server with 5 s of
// downtime, in the middle of a job: the sessions die
// under both exactly-once sinks; the job restarts from its last checkpoint once the server
// is back (or the commit retries on a new connection), and every record shows exactly once
// with nothing left prepared. Prepared
// transactions survive the restart, so a checkpoint pre-committed before it commits after.
// Runs in the "services-restart" project, before the other tests and beside only tests that
// restart other servers: the restart ends every session on the server.

import { DeliveryGuarantee } from "@exactly/core";
import { crashPostgres, pgUrl, restartPostgres } from "@exactly/testkit/endpoints";
import { runThroughFault } from "@exactly/testkit/fault-run";
import { afterAll, describe, expect, it } from "vitest";
import { postgresSink } from "../src/index.ts";
import { committedIds, createRecordsTable, dropTable, preparedUnder, RECORD_COLUMNS, tableNameFor } from "./helpers.ts";

const tables: string[] = [];
afterAll(async () => {
  for (const table of tables) await dropTable(pgUrl(), table);
});

describe("a Postgres restart or crash in the middle of a job", () => {
  it.each([
    ["two-phase", "restart"],
    ["write-ahead", "restart"],
    ["two-phase", "sigkill"],
    ["write-ahead", "sigkill"],
  ] as const)("%s, server %s: the job rides through it and writes every record exactly once", async (kind, outage) => {
    const table = tableNameFor();
    tables.push(table);
    await createRecordsTable(pgUrl(), table);
    const name = `restart-${kind}-${Math.random().toString(36).slice(2, 8)}`;
    const records = 60_000;
    const result = await runThroughFault({
      name: "postgres-restart",
      sink: postgresSink({
        connection: pgUrl(),
        guarantee: DeliveryGuarantee.EXACTLY_ONCE,
        exactlyOnce: kind,
        name,
        table: { table, columns: [...RECORD_COLUMNS], write: "append" },
        flushRows: 1000,
        nameLockWaitMs: 5000,
      }),
      records,
      generate: (i) => ({ id: i, key: `k${i}`, version: 0, payload: "x" }),
      ratePerSecond: 10_000,
      batchSize: 500,
      // The default strategy's classification: an outage of any length is ridden through.
      restart: { initialDelayMs: 200, maxDelayMs: 1000 },
      // Let a few checkpoints complete first, so there is committed and pending work to keep.
      faultAfterMs: 2000,
      before: async () => (await committedIds(pgUrl(), table)).length,
      // A fast shutdown, or a SIGKILL with the server down 5 s (crash recovery from the WAL after).
      fault: () => (outage === "restart" ? restartPostgres() : crashPostgres({ downMs: 5000 })),
    });
    const { before, attempts } = result;
    expect(result.endedBeforeFault).toBe(false);
    expect(before).toBeGreaterThan(0);
    expect(before).toBeLessThan(records);
    expect(attempts).toBe(result.restarts + 1);
    // The two-phase sink's open transaction dies with its session: the job restarts. The
    // write-ahead sink holds no transaction between commits; a commit cut by the restart
    // is retried on a new connection, and the job may not restart at all.
    if (kind === "two-phase") expect(result.restarts).toBeGreaterThan(0);
    const ids = await committedIds(pgUrl(), table);
    expect(ids.length).toBe(records);
    expect(new Set(ids).size).toBe(records);
    expect(await preparedUnder(pgUrl(), name)).toEqual([]);
  });
});
