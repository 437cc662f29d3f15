// PostgresConditionalRecord on the real server: the contract suite, on a connection string and
// on a caller's pool, and names that try to break out of their identifier or value.
import { randomBytes } from "node:crypto";
import { ConfigurationError } from "@exactly/core";
import { conditionalRecordSuite } from "@exactly/testkit/conditional-record-suite";
import { pgUrl } from "@exactly/testkit/endpoints";
import { startTcpProxy } from "@exactly/testkit/tcp-proxy";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { PostgresConditionalRecord, RECORD_TABLE } from "../src/index.ts";
import { withClient } from "./helpers.ts";

/** A schema of this file's own, dropped with its tables after the file. */
const schema = `records_${randomBytes(4).toString("hex")}`;
let pool: pg.Pool | undefined;
afterAll(async () => {
  await pool?.end();
  await withClient(pgUrl(), (c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
});

conditionalRecordSuite("Postgres", (name) => new PostgresConditionalRecord({ connection: pgUrl(), schema, name }));

conditionalRecordSuite("Postgres (a caller's pool)", (name) => {
  pool ??= new pg.Pool({ connectionString: pgUrl(), max: 10 });
  return new PostgresConditionalRecord({ connection: pool, schema, name, table: "pooled_records" });
});

describe("PostgresConditionalRecord", () => {
  it("creates its table once when many records start on it at the same time", async () => {
    const table = `fresh_${randomBytes(4).toString("hex")}`;
    const records = Array.from(
      { length: 8 },
      (_, i) => new PostgresConditionalRecord({ connection: pgUrl(), schema, table, name: `r${i}` }),
    );
    try {
      expect(await Promise.all(records.map((r) => r.replace(undefined, { n: 1 })))).toEqual(Array(8).fill("1"));
    } finally {
      await Promise.all(records.map((r) => r.close()));
    }
  });

  it("quotes a table name with quotes, dots and SQL in it, and binds a record name as a value", async () => {
    const table = `x"; DROP TABLE ${RECORD_TABLE}; --.y`;
    const name = `'); DELETE FROM "${schema}"."${RECORD_TABLE}"; --`;
    await withClient(pgUrl(), (c) =>
      c.query(
        `CREATE TABLE IF NOT EXISTS "${schema}"."${RECORD_TABLE}" (name text PRIMARY KEY, version bigint, value jsonb)`,
      ),
    );
    await withClient(pgUrl(), (c) =>
      c.query(`INSERT INTO "${schema}"."${RECORD_TABLE}" VALUES ('canary', 1, '{}') ON CONFLICT DO NOTHING`),
    );
    const record = new PostgresConditionalRecord<unknown>({ connection: pgUrl(), schema, table, name });
    try {
      const version = await record.replace(undefined, { epoch: 1 });
      expect(await record.read()).toEqual({ value: { epoch: 1 }, version });
      const rows = await withClient(pgUrl(), async (c) => ({
        odd: (await c.query(`SELECT name FROM "${schema}"."${table.replaceAll('"', '""')}"`)).rows,
        canary: (await c.query(`SELECT name FROM "${schema}"."${RECORD_TABLE}" WHERE name = 'canary'`)).rows,
      }));
      expect(rows).toEqual({ odd: [{ name }], canary: [{ name: "canary" }] });
    } finally {
      await record.close();
    }
  });

  it("refuses a table or schema name Postgres would cut or cannot hold, and a version it never gave", async () => {
    for (const [setting, options] of [
      ["table", { table: "t".repeat(64) }],
      ["table", { table: "" }],
      ["schema", { schema: "s\0" }],
    ] as const) {
      expect(() => new PostgresConditionalRecord({ connection: pgUrl(), name: "r", ...options })).toThrow(
        expect.objectContaining({ setting }),
      );
    }
    expect(() => new PostgresConditionalRecord({ connection: pgUrl(), name: "r", table: "é".repeat(32) })).toThrow(
      ConfigurationError,
    );
    const record = new PostgresConditionalRecord({ connection: pgUrl(), schema, name: "foreign-version" });
    try {
      await record.replace(undefined, { epoch: 1 });
      for (const foreign of ['"0cc175b9c0f1b6a831c399e269772661"', "1 OR true", "01", "-1", ""]) {
        expect(await record.replace(foreign, { epoch: 2 }), foreign).toBeUndefined();
      }
      expect((await record.read())?.value).toEqual({ epoch: 1 });
    } finally {
      await record.close();
    }
  });

  it("throws a transient error when the answer to a replacement is cut, and connects again for the next call", async () => {
    const server = new URL(pgUrl());
    const proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
    const url = new URL(pgUrl());
    url.hostname = "127.0.0.1";
    url.port = String(proxy.port);
    const record = new PostgresConditionalRecord({ connection: url.toString(), schema, name: "cut" });
    try {
      const first = await record.replace(undefined, { epoch: 1 });
      // The answer is held back longer than the proxy waits before it cuts the connection.
      proxy.setLatency(200);
      const cut = proxy.cutAfterRequest("UPDATE");
      const error = await record.replace(first, { epoch: 2 }).catch((e: unknown) => e);
      await cut;
      proxy.setLatency(0);
      expect(record.isTransient(error)).toBe(true);
      // The server got the UPDATE: reading again tells what became of it.
      expect(await record.read()).toEqual({ value: { epoch: 2 }, version: "2" });
      expect(await record.replace("2", { epoch: 3 })).toBe("3");
    } finally {
      await record.close();
      await proxy.close();
    }
  });

  it("leaves a client it was given open", async () => {
    const client = new pg.Client({ connectionString: pgUrl() });
    await client.connect();
    const record = new PostgresConditionalRecord({ connection: client, schema, name: "given" });
    expect(await record.replace(undefined, { epoch: 1 })).toBe("1");
    await record.close();
    expect((await client.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
    await client.end();
  });
});
