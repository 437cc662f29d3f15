// `exactly lingering s3` against the real server (MinIO), on an S3 file sink job SIGKILLed
// right after a checkpoint became durable, before any upload was completed, and never
// restarted: the checkpoint's part files are open multipart uploads. The tool lists them as
// pre-committed and spares them when given the job's checkpoints; without them, --abort refuses and --abort-without-checkpoints ends
// them all and nothing is left open under the prefix.

import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { FileSystemCheckpointStorage } from "@exactly/core";
import type { LingeringJson } from "@exactly/testkit/cli-output";
import { s3Config } from "@exactly/testkit/endpoints";
import { runExactly } from "@exactly/testkit/run-cli";
import { runFixture } from "@exactly/testkit/run-fixture";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { S3JobConfig } from "./fixtures/s3-job.ts";
import { openUploads, testBucket } from "./helpers.ts";

const fixture = fileURLToPath(new URL("./fixtures/s3-job.ts", import.meta.url));

/** The upload ids the latest complete checkpoint holds as pre-committed. */
async function pendingUploads(checkpoints: string): Promise<string[]> {
  const restored = await new FileSystemCheckpointStorage(checkpoints).loadLatest();
  const ids: string[] = [];
  for (const state of restored?.states.values() ?? []) {
    // The sink's state lists its pending transactions; the source's holds positions.
    const { pending } = state as { pending?: Array<{ txn: { parts: Array<{ recoverable: { uploadId: string } }> } }> };
    for (const p of pending ?? []) for (const part of p.txn.parts) ids.push(part.recoverable.uploadId);
  }
  return ids.sort();
}

describe("exactly lingering s3", () => {
  const { bucket, s3 } = testBucket("lingering", s3Config);
  afterEach(() => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
  });

  async function lingering(prefix: string, ...args: string[]) {
    process.exitCode = undefined;
    const printed = await runExactly(
      "lingering",
      "s3",
      "--s3-endpoint",
      s3Config().endpoint,
      "--bucket",
      bucket,
      "--prefix",
      prefix,
      "--json",
      ...args,
    );
    const exitCode = process.exitCode;
    process.exitCode = undefined;
    vi.restoreAllMocks();
    return { report: JSON.parse(printed.join("\n")) as LingeringJson, exitCode };
  }

  it("spares the uploads a durable checkpoint pre-committed; without --checkpoints --abort refuses and --abort-without-checkpoints ends every one", async () => {
    const client = await s3();
    const prefix = `lingering-${randomBytes(4).toString("hex")}`;
    const checkpoints = await mkdtemp(join(tmpdir(), "exactly-lingering-s3-"));
    const config: S3JobConfig = {
      s3: s3Config(),
      bucket,
      prefix,
      records: 100_000_000,
      pad: 200,
      checkpoints,
      intervalMs: 300,
      ratePerSecond: 5000,
      parallelism: 2,
    };
    const run = await runFixture(fixture, {
      S3_JOB: JSON.stringify(config),
      EXACTLY_FAULT: "after-checkpoint-durable@3",
    });
    expect(run.signal, run.stderr.slice(-2000)).toBe("SIGKILL");

    // No sink was told to commit: every upload the checkpoint pre-committed is still open.
    const pending = await pendingUploads(checkpoints);
    expect(pending.length).toBeGreaterThan(0);
    const open = (await openUploads(client, bucket, `${prefix}/`)).map((u) => u.uploadId);
    for (const uploadId of pending) expect(open).toContain(uploadId);

    const listed = await lingering(prefix, "--checkpoints", checkpoints, "--abort", "--yes");
    const uploadOf = (item: LingeringJson["items"][number]) => item.reference;
    expect(
      listed.report.items
        .filter((i) => i.status === "pre-committed")
        .map(uploadOf)
        .sort(),
    ).toEqual(pending);
    expect(listed.report.items.filter((i) => i.aborted).length).toBe(
      listed.report.items.filter((i) => i.status !== "pre-committed").length,
    );
    expect(listed.exitCode, "the pre-committed uploads are left open").toBe(1);
    expect((await openUploads(client, bucket, `${prefix}/`)).map((u) => u.uploadId).sort()).toEqual(pending);

    await expect(lingering(prefix, "--abort", "--yes")).rejects.toThrow("--checkpoints");
    const all = await lingering(prefix, "--abort-without-checkpoints", "--yes");
    expect(all.exitCode).toBe(0);
    expect(all.report.items.map(uploadOf).sort()).toEqual(pending);
    expect(await openUploads(client, bucket, `${prefix}/`)).toEqual([]);
    expect((await lingering(prefix)).report.items).toEqual([]);
  });
});
