// The network between the job and Redis fails, through a TCP proxy the test controls: the
// connection carrying a write-ahead checkpoint's apply script (EVALSHA) is cut right after
// the server got it (the sink never hears the answer: whether it applied is read from the
// marker the script moves in the same step), every connection is cut mid-run, and 20 ms of
// latency is added each way. Every count and list entry lands once; every key ends at its
// last record.

import type { SinkFactory } from "@exactly/core";
import { redisUrl } from "@exactly/testkit/endpoints";
import { runThroughFault } from "@exactly/testkit/fault-run";
import { startTcpProxy, type TcpProxy } from "@exactly/testkit/tcp-proxy";
import { afterAll, describe, expect, it } from "vitest";
import { RedisUpsertSink, RedisWriteAheadSink, versionKeyOf } from "../src/index.ts";
import { deleteUnder, freshPrefix, withRedis } from "./helpers.ts";

interface Row {
  id: number;
  key: string;
}

const KEYS = 200;
const RECORDS = 30_000;

const prefixes: string[] = [];
afterAll(async () => {
  for (const prefix of prefixes) await deleteUnder(redisUrl(), prefix);
});

/** The job's URL: the server's, with the proxy's host and port. */
function throughProxy(proxy: TcpProxy): string {
  const url = new URL(redisUrl());
  url.hostname = "127.0.0.1";
  url.port = String(proxy.port);
  return url.toString();
}

type SinkKind = "write-ahead" | "upsert";

/** A request that runs a script by its SHA: ioredis writes the command name in lower case. */
const isScriptCall = (chunk: Buffer) => /\bevalsha\b/i.test(chunk.toString("latin1"));

function sinkOf(kind: SinkKind, connection: string, prefix: string): SinkFactory<Row> {
  if (kind === "write-ahead") {
    return () =>
      new RedisWriteAheadSink<Row>({
        connection,
        keyPrefix: prefix,
        operations: (r) => [
          { op: "hIncrBy", key: "counts", field: r.key, by: 1 },
          { op: "rPush", key: "ids", values: [r.id] },
        ],
        operationsPerCall: 200,
      });
  }
  return () =>
    new RedisUpsertSink<Row>({
      connection,
      keyPrefix: prefix,
      key: (r) => r.key,
      version: (r) => r.id,
      value: { shape: "json" },
      maxBufferedRecords: 200,
    });
}

/** Runs a job through the proxy, brings the fault 1 s in, and checks the result exactly. */
async function runThrough(kind: SinkKind, fault: (proxy: TcpProxy) => Promise<unknown>): Promise<{ cuts: number }> {
  const server = new URL(redisUrl());
  const proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 6379) });
  const prefix = freshPrefix(`net-${kind}`);
  prefixes.push(prefix);
  try {
    const run = await runThroughFault({
      name: "redis-network",
      sink: sinkOf(kind, throughProxy(proxy), prefix),
      records: RECORDS,
      generate: (i): Row => ({ id: i, key: `k${i % KEYS}` }),
      ratePerSecond: 10_000,
      faultAfterMs: 1000,
      fault: () => fault(proxy),
    });
    // A fault after the job ended would have tested nothing.
    expect(run.endedBeforeFault).toBe(false);
    await withRedis(redisUrl(), async (client) => {
      if (kind === "write-ahead") {
        const counts = await client.hgetall(`${prefix}counts`);
        expect(Object.keys(counts)).toHaveLength(KEYS);
        for (const n of Object.values(counts)) expect(Number(n)).toBe(RECORDS / KEYS);
        const ids = (await client.lrange(`${prefix}ids`, 0, -1)).map(Number);
        expect(ids).toHaveLength(RECORDS);
        expect(new Set(ids).size).toBe(RECORDS);
        return;
      }
      for (let k = 0; k < KEYS; k++) {
        const last = RECORDS - KEYS + k;
        const [value, version] = await client.mget(`${prefix}k${k}`, versionKeyOf(`${prefix}k${k}`));
        expect({ value: JSON.parse(value as string), version: Number(version) }).toEqual({
          value: { id: last, key: `k${k}` },
          version: last,
        });
      }
    });
    return { cuts: proxy.cuts };
  } finally {
    await proxy.close();
  }
}

describe("the network between the job and Redis", () => {
  it("write-ahead: the connection is cut while a checkpoint's apply script is in flight; the marker settles it", async () => {
    const { cuts } = await runThrough("write-ahead", (proxy) => proxy.cutAfterRequest(isScriptCall));
    expect(cuts).toBe(1);
  });

  it.each(["write-ahead", "upsert"] as const)("%s: every connection cut mid-run", async (kind) => {
    const { cuts } = await runThrough(kind, async (proxy) => proxy.cutAll());
    expect(cuts).toBeGreaterThan(0);
  });

  it.each(["write-ahead", "upsert"] as const)("%s: 20 ms of latency each way for the rest of the run", async (kind) => {
    await runThrough(kind, async (proxy) => proxy.setLatency(20));
  });
});
