// `exactly lingering` on a job run as shards (docs/design.md §2, Shards; §4.7): pointed at
// the job's root location, it reads every shard's head and epoch folders, so nothing any
// shard's complete checkpoint pre-committed is aborted, and the shards then finish with every
// record. A shard's folder, an epoch folder or a checkpoint folder holds only part of the job's
// checkpoints (aborting by one of them once rolled back another shard's pre-committed work and
// lost its rows): they are refused, naming the root to give instead.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { type CheckpointStorage, declareRescale, FileSystemCheckpointStorage } from "@exactly/core";
import type { LingeringJson } from "@exactly/testkit/cli-output";
import { s3Config } from "@exactly/testkit/endpoints";
import { afterAll, describe, expect, it } from "vitest";
import { expectExactOutput, head, type Location, startShard } from "../fixtures/shard-processes.ts";
import { checkpointsOf } from "../fixtures/sharded-seq-job.ts";

const cli = fileURLToPath(new URL("../fixtures/exactly-cli.ts", import.meta.url));
const RECORDS = 6_000;
const JOB_ENV = { SHARDED_JOB_RECORDS: String(RECORDS), SHARDED_JOB_RATE: "2000" };

const bucket = `exactly-lingering-${randomBytes(4).toString("hex")}`;
let s3: S3Client | undefined;

/** A checkpoint location as the job and the tool name it: a folder of the output, or an s3:// prefix. */
interface Place extends Location {
  readonly root: string;
}

const places: Array<[string, (out: string) => Promise<Place>]> = [
  [
    "checkpoints in a local folder",
    async (out) => {
      const root = checkpointsOf(out, undefined) as string;
      return { root, env: {}, storage: new FileSystemCheckpointStorage(root) };
    },
  ],
  [
    "checkpoints on S3",
    async (out) => {
      if (!s3) {
        s3 = new S3Client(s3Config());
        await s3.send(new CreateBucketCommand({ Bucket: bucket }));
      }
      const root = `s3://${bucket}/${out.split("/").at(-1)}`;
      const config = s3Config();
      const env = {
        SHARDED_JOB_CHECKPOINTS: root,
        EXACTLY_S3_ENDPOINT: config.endpoint,
        EXACTLY_S3_REGION: config.region,
        EXACTLY_S3_ACCESS_KEY: config.credentials.accessKeyId,
        EXACTLY_S3_SECRET_KEY: config.credentials.secretAccessKey,
      };
      const saved = { ...process.env };
      Object.assign(process.env, env);
      try {
        return { root, env, storage: checkpointsOf(out, root) as CheckpointStorage };
      } finally {
        for (const key of Object.keys(env)) if (saved[key] === undefined) delete process.env[key];
        Object.assign(process.env, saved);
      }
    },
  ],
];

afterAll(() => s3?.destroy());

function lingering(at: Place, out: string, ...args: string[]) {
  const run = spawnSync(
    process.execPath,
    [
      "--conditions=@exactly/source",
      "--disable-warning=ExperimentalWarning",
      cli,
      "lingering",
      "file",
      "--directory",
      join(out, "seq"),
      "--sink",
      "seq",
      "--json",
      ...args,
    ],
    { encoding: "utf8", env: { ...process.env, ...at.env } },
  );
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

function reportOf(run: { stdout: string; stderr: string }): LingeringJson {
  try {
    return JSON.parse(run.stdout) as LingeringJson;
  } catch {
    throw new Error(`not a report:\n${run.stdout}\n${run.stderr}`);
  }
}

/**
 * `count` shard processes, each SIGKILLed once its `checkpoint`-th checkpoint is complete
 * (named by its head); returns what they logged.
 */
async function shardsKilledAfterCheckpoint(out: string, at: Place, count: number, checkpoint: number): Promise<string> {
  const procs = Array.from({ length: count }, (_, k) =>
    startShard(out, at, ["--shard", `${k}/${count}`, "--lease-duration", "1"], {
      ...JOB_ENV,
      EXACTLY_FAULT: `after-checkpoint-durable@${checkpoint}`,
    }),
  );
  for (const p of procs) expect(await p.exited, p.stderr).toEqual({ code: null, signal: "SIGKILL" });
  return procs.map((p) => p.stderr).join("\n");
}

/** The in-progress parts of sink subtask `subtask` (a shard's, at parallelism 1) among `ids`. */
function ofSubtask(ids: readonly string[], subtask: number): string[] {
  return ids.filter((id) => id.includes(`/.part-seq-${subtask}-`));
}

/**
 * Lists the sink's in-progress parts against the root, then aborts by it: every shard's
 * pre-committed parts are spared, the rest removed.
 */
function abortByRoot(at: Place, out: string, count: number): void {
  const listed = lingering(at, out, "--checkpoints", at.root);
  expect(listed.code, listed.stderr).toBe(1);
  const report = reportOf(listed);
  expect(report.shardsRead).toEqual(Array.from({ length: count }, (_, k) => k));
  const preCommitted = report.items.filter((i) => i.status === "pre-committed").map((i) => i.id);
  // Every shard was killed right after a complete checkpoint: each one has parts it pre-committed,
  // which its own checkpoints reference.
  for (let k = 0; k < count; k++) {
    expect(ofSubtask(preCommitted, k), `shard ${k}`).not.toEqual([]);
    for (const item of report.items.filter((i) => ofSubtask([i.id], k).length > 0 && i.status === "pre-committed"))
      expect(item.referencedBy.map((r) => r.shard)).toContain(k);
  }
  expect(report.items.filter((i) => i.status === "pre-committed").every((i) => !i.abortable)).toBe(true);

  const aborted = lingering(at, out, "--checkpoints", at.root, "--abort", "--yes");
  expect(aborted.code, aborted.stderr).toBe(1);
  expect(reportOf(aborted).items.filter((i) => i.aborted)).toHaveLength(report.items.length - preCommitted.length);
  const left = reportOf(lingering(at, out, "--checkpoints", at.root));
  expect(left.items.map((i) => i.id).sort()).toEqual([...preCommitted].sort());
}

describe.each(places)("exactly lingering on a sharded job, %s", (_, locate) => {
  it("given the root, spares what any shard's complete checkpoint pre-committed, of 2 shards and then of 3, and the shards finish with every record", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-lingering-shards-"));
    const at = await locate(out);

    await shardsKilledAfterCheckpoint(out, at, 2, 3);
    abortByRoot(at, out, 2);

    // Rescaled to 3, declared as `exactly rescale <root> 3` does: each new shard restores its part
    // of the 2 shards' checkpoints (the layout's base, whose epoch folders stay) and completes
    // checkpoints of its own in a new epoch.
    await declareRescale(at.storage, 3);
    expect(await shardsKilledAfterCheckpoint(out, at, 3, 3)).toContain("rescaled from 2 to 3 shards");
    const epochs = (await at.storage.scoped?.("shard-0").scopes?.())?.filter((n) => n.startsWith("epoch-"));
    expect(epochs, "shard 0's epoch folders: the base's and its own").toHaveLength(2);
    abortByRoot(at, out, 3);

    const last = Array.from({ length: 3 }, (_, k) =>
      startShard(out, at, ["--shard", `${k}/3`, "--lease-duration", "1"], JOB_ENV),
    );
    for (const p of last) expect(await p.exited, p.stderr).toEqual({ code: 0, signal: null });
    await expectExactOutput(out, RECORDS);
    expect(lingering(at, out).code).toBe(0);
  });

  it("refuses a shard's folder, an epoch folder and a checkpoint folder, naming the root, and aborts nothing", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-lingering-shards-"));
    const at = await locate(out);
    await shardsKilledAfterCheckpoint(out, at, 2, 3);
    const before = reportOf(lingering(at, out)).items.map((i) => i.id);
    expect(before).not.toEqual([]);

    const latest = (await head(at, 1))?.latest;
    expect(latest).toBeDefined();
    const epoch = `${at.root}/shard-1/epoch-${latest?.epoch}`;
    for (const sub of [epoch, `${epoch}/chk-${latest?.checkpointId}`, `${at.root}/shard-0`, `${at.root}/shard-1/`]) {
      const run = lingering(at, out, "--checkpoints", sub, "--abort", "--yes");
      expect(run.code, `${sub}\n${run.stdout}\n${run.stderr}`).toBe(2);
      const lines = run.stderr.trim().split("\n");
      expect(lines, run.stderr).toHaveLength(1);
      expect(lines[0]).toContain("--checkpoints");
      expect(lines[0]).toContain(`give the job's root location ${at.root}`);
      expect(reportOf(lingering(at, out)).items.map((i) => i.id)).toEqual(before);
    }
  });
});
