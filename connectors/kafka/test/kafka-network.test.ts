// The network between the job and the broker fails, through a TCP proxy the test controls
// (the job is bootstrapped at the broker's proxied listener, which advertises the proxy's
// address, so every broker connection of the job goes through it): the connection
// carrying EndTxn (the commit) is cut right after the broker got it, so the sink never
// hears whether its transaction committed and must settle that from the broker; every
// connection is cut mid-run; 20 ms of latency is added each way. Every record is committed
// once and no transaction is left open.

import { kafkaBrokers, kafkaProxiedListener } from "@exactly/testkit/endpoints";
import { runThroughFault } from "@exactly/testkit/fault-run";
import { idCounts, uniqueName } from "@exactly/testkit/ids";
import { startTcpProxy, type TcpProxy } from "@exactly/testkit/tcp-proxy";
import { describe, expect, it } from "vitest";
import { kafkaSink } from "../src/index.ts";
import { createTopic, exactlyOnceReport, newKafka, partitionEnds, readCommitted } from "./helpers.ts";

const RECORDS = 30_000;
const PARTITIONS = 3;
/** Kafka's API key of EndTxn, which ends (commits or aborts) a transaction. */
const END_TXN = 26;

/** Whether a client → broker chunk holds an EndTxn request (size, then API key, per frame). */
function holdsEndTxn(chunk: Buffer): boolean {
  let at = 0;
  while (at + 6 <= chunk.length) {
    if (chunk.readInt16BE(at + 4) === END_TXN) return true;
    const size = chunk.readInt32BE(at);
    if (size <= 0) return false; // not at a frame's start
    at += 4 + size;
  }
  return false;
}

async function runThrough(fault: (proxy: TcpProxy) => Promise<unknown>): Promise<{ cuts: number }> {
  const { advertised, upstream } = kafkaProxiedListener();
  const proxy = await startTcpProxy(upstream, advertised.port);
  const admin = newKafka(kafkaBrokers());
  const topic = uniqueName("net");
  await createTopic(admin, topic, PARTITIONS);
  try {
    const run = await runThroughFault({
      name: "kafka-network",
      sink: kafkaSink<{ id: number }>({
        brokers: [`${advertised.host}:${advertised.port}`],
        topic,
        transactionalIdPrefix: topic,
        transactionTimeoutMs: 120_000,
        checkpointTiming: { intervalMs: 100, timeoutMs: 60_000, restartDelayMs: 1000 },
        serializer: (r) => ({ key: String(r.id), value: JSON.stringify(r) }),
      }),
      records: RECORDS,
      generate: (id) => ({ id }),
      ratePerSecond: 10_000,
      batchSize: 500,
      faultAfterMs: 1500,
      fault: () => fault(proxy),
    });
    // A fault after the job ended would have tested nothing.
    expect(run.endedBeforeFault).toBe(false);
    const report = exactlyOnceReport(idCounts(await readCommitted(topic, PARTITIONS)), RECORDS);
    expect(report).toEqual({ lost: [], duplicated: [], phantom: [] });
    for (const end of await partitionEnds(topic, PARTITIONS)) {
      expect(end.lastStableOffset, `partition ${end.partition}: an open transaction blocks readers`).toBe(
        end.highWatermark,
      );
    }
    return { cuts: proxy.cuts };
  } finally {
    await proxy.close();
  }
}

describe("the network between the job and the broker", () => {
  it("the connection is cut while EndTxn (the commit) is in flight; the outcome is settled from the broker", async () => {
    const { cuts } = await runThrough((proxy) => proxy.cutAfterRequest(holdsEndTxn));
    expect(cuts).toBe(1);
  });

  it("every connection cut mid-run", async () => {
    const { cuts } = await runThrough(async (proxy) => proxy.cutAll());
    expect(cuts).toBeGreaterThan(0);
  });

  it("20 ms of latency each way for the rest of the run", async () => {
    await runThrough(async (proxy) => proxy.setLatency(20));
  });
});
