// Smoke test of the Postgres service: two-phase commit as the Postgres sink uses it. A prepared
// transaction stays invisible, survives a server restart, and is then committed (or rolled back)
// from a new session.

import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { pgUrl, restartPostgres } from "../endpoints.ts";

const run = randomUUID().slice(0, 8);
const table = `smoke_2pc_${run}`;
const commitGid = `exactly-smoke:${run}:commit`;
const rollbackGid = `exactly-smoke:${run}:rollback`;

async function withClient<T>(use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: pgUrl() });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

async function prepare(gid: string, value: string): Promise<void> {
  await withClient(async (client) => {
    await client.query("BEGIN");
    await client.query(`INSERT INTO ${table} (value) VALUES ($1)`, [value]);
    await client.query(`PREPARE TRANSACTION '${gid}'`);
  });
}

const visibleValues = () =>
  withClient(async (client) =>
    (await client.query(`SELECT value FROM ${table} ORDER BY value`)).rows.map((r) => r.value),
  );

const preparedGids = () =>
  withClient(async (client) =>
    (
      await client.query("SELECT gid FROM pg_prepared_xacts WHERE gid LIKE $1 ORDER BY gid", [`exactly-smoke:${run}:%`])
    ).rows.map((r) => r.gid),
  );

const startTime = () =>
  withClient(
    async (client) => (await client.query("SELECT pg_postmaster_start_time()::text AS t")).rows[0].t as string,
  );

describe("Postgres service", () => {
  let created = false;

  afterAll(async () => {
    if (!created) return;
    await withClient(async (client) => {
      for (const gid of await preparedGids()) await client.query(`ROLLBACK PREPARED '${gid}'`);
      await client.query(`DROP TABLE IF EXISTS ${table}`);
    });
  });

  it("allows prepared transactions", async () => {
    const setting = await withClient((client) => client.query("SHOW max_prepared_transactions"));
    expect(Number(setting.rows[0].max_prepared_transactions)).toBeGreaterThan(0);
  });

  it("keeps prepared transactions across a server restart, then commits and rolls them back", async () => {
    // Set up inside the test, not in a hook: without an endpoint the test itself fails (a
    // failing beforeAll would only mark it skipped).
    await withClient((client) => client.query(`CREATE TABLE ${table} (value text PRIMARY KEY)`));
    created = true;
    await prepare(commitGid, "committed");
    await prepare(rollbackGid, "rolled-back");
    expect(await visibleValues()).toEqual([]);
    expect(await preparedGids()).toEqual([commitGid, rollbackGid]);

    const before = await startTime();
    await restartPostgres();
    expect(await startTime()).not.toEqual(before);

    expect(await preparedGids()).toEqual([commitGid, rollbackGid]);
    expect(await visibleValues()).toEqual([]);

    await withClient(async (client) => {
      await client.query(`COMMIT PREPARED '${commitGid}'`);
      await client.query(`ROLLBACK PREPARED '${rollbackGid}'`);
    });
    expect(await visibleValues()).toEqual(["committed"]);
    expect(await preparedGids()).toEqual([]);

    // Committing again is an error Postgres reports as "does not exist" (SQLSTATE 42704): the
    // sink's recommit disambiguates it with a marker row.
    await expect(withClient((client) => client.query(`COMMIT PREPARED '${commitGid}'`))).rejects.toMatchObject({
      code: "42704",
    });
  });
});
