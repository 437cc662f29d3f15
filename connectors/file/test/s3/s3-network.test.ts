// The network between the job and the S3 server fails, through a TCP proxy the test
// controls: the connection carrying CompleteMultipartUpload (the commit) is cut right after
// the server got it, so the sink never hears the answer and settles the part from what the
// server holds (HeadObject: our length and nonce); the connection carrying a
// CreateMultipartUpload is cut the same way, so the SDK creates again and the first upload is
// one the sink never heard of; every connection is cut mid-run; 20 ms
// of latency is added each way. Every record lands once and no multipart upload is left.

import { randomBytes } from "node:crypto";
import { s3Config } from "@exactly/testkit/endpoints";
import { runThroughFault } from "@exactly/testkit/fault-run";
import { startTcpProxy, type TcpProxy } from "@exactly/testkit/tcp-proxy";
import { describe, expect, it } from "vitest";
import { MIN_PART_BYTES, s3FileSink } from "../../src/s3/index.ts";
import { idCountsUnder, openUploads, testBucket } from "./helpers.ts";

const { bucket, s3 } = testBucket("network", s3Config);

const RECORDS = 30_000;

/** An HTTP request that completes a multipart upload: `POST /<bucket>/<key>?uploadId=…`. */
const isCompletion = (chunk: Buffer) =>
  chunk.subarray(0, 5).toString("latin1") === "POST " && chunk.includes("uploadId=");

/** An HTTP request that creates a multipart upload: `POST /<bucket>/<key>?uploads`. */
const isCreate = (chunk: Buffer) => {
  const line = chunk.subarray(0, chunk.indexOf("\r\n")).toString("latin1");
  return line.startsWith("POST ") && /[?&]uploads(=|&|\s|$)/.test(line);
};

async function runThrough(fault: (proxy: TcpProxy) => Promise<unknown>): Promise<{ cuts: number }> {
  const client = await s3(); // makes the test bucket
  const server = new URL(s3Config().endpoint);
  const proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 80) });
  const prefix = `net-${randomBytes(4).toString("hex")}`;
  const pad = "n".repeat(200);
  try {
    const run = await runThroughFault({
      name: "s3-network",
      sink: () =>
        s3FileSink({
          bucket,
          prefix,
          connection: { ...s3Config(), endpoint: `http://127.0.0.1:${proxy.port}` },
          partSizeBytes: MIN_PART_BYTES,
          bucketAssigner: (r: { id: number }) => `b${r.id % 2}`,
        }),
      records: RECORDS,
      generate: (id) => ({ id, pad }),
      ratePerSecond: 8_000,
      checkpointIntervalMs: 200,
      faultAfterMs: 1500,
      fault: () => fault(proxy),
    });
    // A fault after the job ended would have tested nothing.
    expect(run.endedBeforeFault).toBe(false);
    const counts = await idCountsUnder(client, bucket, `${prefix}/`);
    expect(counts.size).toBe(RECORDS);
    expect([...counts.values()].filter((n) => n !== 1)).toEqual([]);
    expect(await openUploads(client, bucket, `${prefix}/`)).toEqual([]);
    return { cuts: proxy.cuts };
  } finally {
    await proxy.close();
  }
}

describe("the network between the job and the S3 server", () => {
  it("the connection is cut while CompleteMultipartUpload is in flight; the part is settled from the server", async () => {
    const { cuts } = await runThrough((proxy) => proxy.cutAfterRequest(isCompletion));
    expect(cuts).toBe(1);
  });

  it("the connection is cut while CreateMultipartUpload is in flight; the upload the lost answer opened is aborted", async () => {
    const { cuts } = await runThrough((proxy) => proxy.cutAfterRequest(isCreate));
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
