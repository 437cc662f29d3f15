/**
 * One shard of one group of the job, in a process of its own so that the runner can SIGKILL
 * it, pause it and stop it, as `exactly run sharded-window-sum.js --group G --shard k/N` runs
 * it in production. It tells the runner, over IPC, when it started, each checkpoint it
 * completed and each failed attempt; SIGTERM stops it with a final checkpoint.
 */
import { loadJob, silentLogger } from "@exactly/core";
import type { ShardedWindowSumConfig } from "./sharded-window-sum.ts";

export interface ShardWorkerSetup {
  readonly config: ShardedWindowSumConfig;
  readonly group: string;
  readonly shard: { readonly index: number; readonly count: number };
  readonly leaseMs: number;
}

export type ShardWorkerMessage =
  | { readonly type: "started"; readonly attempt: number; readonly restored: number | undefined }
  | { readonly type: "checkpoint"; readonly id: number }
  | { readonly type: "restarted"; readonly error: string }
  | { readonly type: "finished" };

const setup = JSON.parse(process.env.SHARD_WORKER_SETUP ?? "{}") as ShardWorkerSetup;
// A runner that went away (it ended, or was killed) is no reason to fail the shard.
const tell = (message: ShardWorkerMessage) => {
  if (process.connected) process.send?.(message, undefined, {}, () => {});
};
// The job module beside this one: its sources from the repo, its build once installed.
const extension = import.meta.url.endsWith(".ts") ? "ts" : "js";
const job = await loadJob(new URL(`./sharded-window-sum.${extension}`, import.meta.url), {
  params: setup.config as unknown as Record<string, unknown>,
  group: setup.group,
  shard: setup.shard,
  lease: { durationMs: setup.leaseMs },
  runtime: { logger: silentLogger },
});
const client = job.start({
  onStart: ({ attempt, restoredCheckpointId }) => tell({ type: "started", attempt, restored: restoredCheckpointId }),
  onComplete: (id) => tell({ type: "checkpoint", id }),
  onRestart: ({ error }) => tell({ type: "restarted", error: String((error as Error)?.message ?? error) }),
});
process.once("SIGTERM", () => {
  void client.stop();
});
await client.result;
tell({ type: "finished" });
process.disconnect?.();
