// `exactly demo --sink s3` against the real server: under SIGKILL every record lands exactly
// once in the part files under the run's prefix, with checkpoints on local disk or on S3,
// and no multipart upload of the run stays open.

import { randomBytes } from "node:crypto";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { s3Config } from "@exactly/testkit/endpoints";
import { runExactly } from "@exactly/testkit/run-cli";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  clearPrefix,
  ensureBucket,
  idCountsUnder,
  openUploads,
  withS3,
} from "../../../../../connectors/file/test/s3/helpers.ts";
import type { CheckpointReport } from "../../../src/inspect/inspect-command.ts";

const bucket = "exactly-demo-test";
const prefixes: string[] = [];
const freshPrefix = (label: string) => {
  const prefix = `${label}-${randomBytes(4).toString("hex")}`;
  prefixes.push(prefix);
  return prefix;
};

const demo = (...args: string[]) =>
  runExactly("demo", "--sink", "s3", "--s3-endpoint", s3Config().endpoint, "--bucket", bucket, "--json", ...args);

describe("exactly demo --sink s3", () => {
  afterEach(async () => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
    await withS3(s3Config(), async (client) => {
      for (const prefix of prefixes.splice(0)) await clearPrefix(client, bucket, `${prefix}/`);
    });
  });

  it.each([
    ["on local disk", false],
    ["on S3", true],
  ])("exactly once under kills, checkpoints %s, no upload left", async (_where, onS3) => {
    const prefix = freshPrefix("demo-eo");
    const checkpoints = onS3 ? [`--checkpoints`, `s3://${bucket}/${freshPrefix("demo-checkpoints")}`] : [];
    const printed = await demo(
      "--prefix",
      prefix,
      "--records",
      "30000",
      "--kills",
      "2",
      "--seed",
      "11",
      ...checkpoints,
    );
    const summary = JSON.parse(printed.at(-1) as string);
    expect(summary).toMatchObject({
      sink: "s3",
      bucket,
      prefix,
      records: 30_000,
      committed: 30_000,
      lost: 0,
      duplicated: 0,
      phantom: 0,
      keysWithBadSequence: 0,
      uploadsLeft: 0,
      kills: 2,
      ok: true,
    });
    if (onS3) expect(summary.checkpointLocation).toBe(checkpoints[1]);
    expect(process.exitCode).toBeUndefined();
    // What the demo read is what another client sees.
    await withS3(s3Config(), async (client) => {
      const counts = await idCountsUnder(client, bucket, `${prefix}/`);
      expect(counts.size).toBe(30_000);
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
      expect(await openUploads(client, bucket, `${prefix}/`)).toEqual([]);
    });
  });

  it("refuses a prefix that already holds objects", async () => {
    const prefix = freshPrefix("demo-used");
    await withS3(s3Config(), async (client) => {
      await ensureBucket(client, bucket);
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: `${prefix}/old.jsonl`, Body: '{"id":1}\n' }));
    });
    await expect(demo("--prefix", prefix, "--records", "1000", "--kills", "0")).rejects.toThrow("holds objects");
  });

  it("refuses a checkpoint location that is not s3://", async () => {
    await expect(demo("--checkpoints", "/tmp/x", "--records", "1000", "--kills", "0")).rejects.toThrow(
      "--checkpoints: must be s3://",
    );
  });

  it("exactly inspect reads the checkpoints the demo kept on S3: the final one, positions, pending uploads", async () => {
    const location = `s3://${bucket}/${freshPrefix("inspect-checkpoints")}`;
    const printed = await demo(
      ...["--prefix", freshPrefix("inspect-out"), "--records", "5000", "--kills", "0", "--checkpoints", location],
    );
    expect(JSON.parse(printed.at(-1) as string)).toMatchObject({ ok: true, lost: 0, duplicated: 0 });
    const reports = JSON.parse(
      (await runExactly("inspect", location, "--s3-endpoint", s3Config().endpoint, "--json")).join("\n"),
    ) as CheckpointReport[];
    const final = reports.at(-1) as CheckpointReport;
    expect(final).toMatchObject({ complete: true, final: true });
    expect(final.sizeBytes).toBeGreaterThan(0);
    const positions = Object.assign({}, ...final.sources.map((s) => s.positions)) as Record<string, number>;
    for (const next of Object.values(positions)) expect(next).toBeGreaterThanOrEqual(5000);
    expect(final.sinks.length).toBeGreaterThan(0);
    // Pending work never belongs to a later checkpoint, and some kept checkpoint that carried
    // records lists its own uploads pending (a last one that carried none lists nothing).
    for (const checkpoint of reports.filter((r) => r.complete)) {
      for (const sink of checkpoint.sinks) {
        for (const p of sink.pending) expect(p.checkpointId).toBeLessThanOrEqual(checkpoint.checkpointId);
      }
    }
    const ownPending = reports.flatMap((r) =>
      r.sinks.flatMap((sink) => sink.pending.filter((p) => p.checkpointId === r.checkpointId)),
    );
    expect(ownPending.length).toBeGreaterThan(0);
  });
});
