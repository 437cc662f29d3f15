// The network between the job and Postgres fails, through a TCP proxy the test controls:
// the connection carrying COMMIT PREPARED is cut right after the server got it (the sink
// never hears the answer, so the outcome is settled from the server: the prepared
// transaction or the marker row), every connection is cut mid-run, and 20 ms of latency is
// added each way. Every record shows exactly once and nothing is left prepared.

import { DeliveryGuarantee } from "@exactly/core";
import { pgUrl } from "@exactly/testkit/endpoints";
import { runThroughFault } from "@exactly/testkit/fault-run";
import { uniqueName } from "@exactly/testkit/ids";
import { startTcpProxy, type TcpProxy } from "@exactly/testkit/tcp-proxy";
import { afterAll, describe, expect, it } from "vitest";
import { postgresSink } from "../src/index.ts";
import { committedIds, createRecordsTable, dropTable, preparedUnder, RECORD_COLUMNS, tableNameFor } from "./helpers.ts";

const tables: string[] = [];
afterAll(async () => {
  for (const table of tables) await dropTable(pgUrl(), table);
});

const RECORDS = 30_000;

/** The job's URL: the server's, with the proxy's port. */
function throughProxy(proxy: TcpProxy): string {
  const url = new URL(pgUrl());
  url.hostname = "127.0.0.1";
  url.port = String(proxy.port);
  return url.toString();
}

async function runThrough(kind: "two-phase" | "write-ahead", fault: (proxy: TcpProxy) => Promise<void>) {
  const server = new URL(pgUrl());
  const proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
  const table = tableNameFor();
  tables.push(table);
  await createRecordsTable(pgUrl(), table);
  const name = uniqueName(`net-${kind}`);
  try {
    const result = await runThroughFault({
      name: "postgres-network",
      sink: postgresSink({
        connection: throughProxy(proxy),
        guarantee: DeliveryGuarantee.EXACTLY_ONCE,
        exactlyOnce: kind,
        name,
        table: { table, columns: [...RECORD_COLUMNS], write: "append" },
        flushRows: 1000,
        nameLockWaitMs: 5000,
      }),
      records: RECORDS,
      generate: (i) => ({ id: i, key: `k${i}`, version: 0, payload: "x" }),
      ratePerSecond: 10_000,
      batchSize: 500,
      faultAfterMs: 1000,
      fault: () => fault(proxy),
    });
    // A fault after the job ended would have tested nothing.
    expect(result.endedBeforeFault).toBe(false);
    const ids = await committedIds(pgUrl(), table);
    expect(ids.length).toBe(RECORDS);
    expect(new Set(ids).size).toBe(RECORDS);
    expect(await preparedUnder(pgUrl(), name)).toEqual([]);
    return { result, cuts: proxy.cuts };
  } finally {
    await proxy.close();
  }
}

describe("the network between the job and Postgres", () => {
  it("two-phase: the connection is cut while COMMIT PREPARED is in flight; the outcome is read from the server", async () => {
    const { cuts } = await runThrough("two-phase", async (proxy) => {
      await proxy.cutAfterRequest("COMMIT PREPARED");
    });
    expect(cuts).toBe(1);
  });

  it.each(["two-phase", "write-ahead"] as const)("%s: every connection cut mid-run", async (kind) => {
    const { cuts } = await runThrough(kind, async (proxy) => {
      proxy.cutAll();
    });
    expect(cuts).toBeGreaterThan(0);
  });

  it("two-phase: 20 ms of latency each way for the whole run", async () => {
    await runThrough("two-phase", async (proxy) => {
      proxy.setLatency(20);
    });
  });
});
