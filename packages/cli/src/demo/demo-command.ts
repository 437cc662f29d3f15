/**
 * `exactly demo`: runs the demo job in a child process, kills it with SIGKILL at planned
 * moments and restarts it (supervisor.ts), then reads the committed output back through the
 * `--sink` target (targets/) and counts lost and duplicated records.
 */
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { resolve } from "node:path";
import { type CheckpointingMode, ConfigurationError, DeliveryGuarantee } from "@exactly/core";
import { checkServer } from "../server-check.ts";
import { DemoInterruptedError, StopRequested, throwIfStopped } from "./demo-interrupt.ts";
import { DEMO_MAX_PARALLELISM, type DemoJobConfig } from "./demo-job-config.ts";
import {
  DEMO_MAX_KILLS,
  DEMO_MAX_RECORDS,
  DEMO_SINKS,
  type DemoOptions,
  type DemoSinkName,
  type DemoSummary,
} from "./demo-options.ts";
import { prepareOut, previousDemo } from "./demo-out.ts";
import { checkDiskRoom } from "./disk-room.ts";
import { planKills } from "./kill-plan.ts";
import { rescaleTarget, type ShardedRun, superviseShards } from "./shard-supervisor.ts";
import { type SupervisedRun, superviseDemo } from "./supervisor.ts";
import { DEMO_TARGETS } from "./targets/demo-targets.ts";

/** Keys of the demo job: record `id` goes to key `id % KEYS`. */
const KEYS = 1024;
const CHECKPOINT_INTERVAL_MS = 500;
/**
 * Checkpoints of an unpaced run with kills (`--rate 0`, or `--checkpointing at-least-once`):
 * an attempt there lasts well under a second, and kills must still fall between completed
 * checkpoints.
 */
const UNPACED_CHECKPOINT_INTERVAL_MS = 100;

/**
 * Unpaced, the demo job reads a few hundred thousand records a second, so a short run would
 * end before its first checkpoint and every kill would land before any checkpoint exists.
 * With kills, the generator is paced so that about four checkpoints pass between two kills.
 */
export function defaultRate(records: number, kills: number, checkpointing: CheckpointingMode): number | undefined {
  if (kills === 0) return undefined;
  // Unaligned barriers differ from aligned ones only when an input is behind another at a
  // barrier. A paced source keeps every channel empty, so nothing ever slips past a barrier
  // and the run would show no difference (0 keys wrong in 5 restores at 25,000 records/s);
  // unpaced, the job runs under load, with backlogs, as a job that needs the mode does.
  if (checkpointing === "at-least-once") return undefined;
  const seconds = (kills + 1) * 4 * (CHECKPOINT_INTERVAL_MS / 1000);
  return Math.max(1, Math.ceil(records / seconds));
}

/**
 * Runs the demo and checks its output. Everything it refuses, it refuses before it makes the
 * output directory. `stop`, aborted with a signal's name (demo-interrupt.ts), ends the run:
 * its processes SIGKILLed, a temp output removed, and DemoInterruptedError thrown.
 */
export async function runDemo(options: DemoOptions, stop?: AbortSignal): Promise<DemoSummary> {
  const { checkpointing, guarantee, guaranteeName } = deliveryOf(options);
  checkCounts(options);
  const sink = sinkOf(options.sink);
  const target = DEMO_TARGETS[sink];
  const previous = await previousDemo(options.out);
  const settings = target.settings(options, previous);
  const ratePerSecond =
    options.rate === undefined ? defaultRate(options.records, options.kills, checkpointing) : options.rate || undefined;
  const underLoad = options.kills > 0 && ratePerSecond === undefined;
  const checkpointIntervalMs = underLoad ? UNPACED_CHECKPOINT_INTERVAL_MS : CHECKPOINT_INTERVAL_MS;
  const bytesPerRecord = target.outBytesPerRecord?.({ records: options.records, keys: KEYS });
  // A resumed run has part of its output on the disk already, which the estimate cannot tell apart.
  if (bytesPerRecord !== undefined && previous === undefined) {
    await checkDiskRoom(options.out === undefined ? tmpdir() : resolve(options.out), {
      records: options.records,
      bytesPerRecord,
      ratePerSecond,
      rateGiven: options.rate !== undefined,
      kills: options.kills,
      checkpointIntervalMs,
      keepsReplays: guarantee === DeliveryGuarantee.AT_LEAST_ONCE,
    });
  }
  const server = target.server?.(settings);
  if (server) await checkServer(server);
  // A resumed run keeps what the earlier run committed: the check covers the whole history.
  const { dir: out, resumed } = await prepareOut(options.out, {
    records: options.records,
    parallelism: options.parallelism,
    guarantee,
    ...(checkpointing === "at-least-once" ? { checkpointing } : {}),
    keys: KEYS,
    sink,
    ...target.identity(settings),
  });
  // A temp directory of 30 MB a run is not left behind unasked, however the run ends: --out or
  // --keep keeps it.
  const outRemoved = options.out === undefined && options.keep !== true;
  try {
    if (!resumed) await target.prepare(settings);
    const config: DemoJobConfig = {
      target: { sink, settings },
      records: options.records,
      out,
      parallelism: options.parallelism,
      // Shard processes share the machine's cores: one event loop each unless --workers says otherwise.
      ...(options.workers === undefined
        ? options.shards === undefined
          ? {}
          : { workers: 1 }
        : { workers: options.workers }),
      guarantee,
      checkpointing,
      checkpointIntervalMs,
      keys: KEYS,
      ratePerSecond,
      ...(options.metricsPort === undefined ? {} : { metricsPort: options.metricsPort }),
    };
    const plan = planKills(options.kills, options.records, options.seed);
    throwIfStopped(stop);
    const run =
      options.shards === undefined
        ? await superviseDemo({ config, plan, resumed, progress: options.progress, ...(stop ? { stop } : {}) })
        : await superviseShards({
            config,
            plan,
            shards: options.shards,
            seed: options.seed,
            progress: options.progress,
            ...(stop ? { stop } : {}),
          });
    const sharded = isSharded(run) ? { shards: run.shards, rescaledTo: run.rescaledTo, zombie: run.zombie } : undefined;
    const { check, leftOpen, fields } = await target.verify(settings, {
      records: options.records,
      keys: KEYS,
      guarantee,
      out,
    });
    throwIfStopped(stop);
    return {
      ...check,
      sink,
      ...fields,
      records: options.records,
      guarantee: guaranteeName,
      checkpointing,
      seed: options.seed,
      resumed,
      resumedFromCheckpoint: run.resumedFrom ?? null,
      kills: run.killed,
      killsAsked: run.killsAsked,
      recoveries: run.recoveries,
      restoredFromCheckpoint: run.restoredFromCheckpoint,
      checkpoints: run.checkpoints,
      elapsedSeconds: run.elapsedSeconds,
      recordsPerSecond: Math.round(options.records / run.elapsedSeconds),
      peakRssMb: Math.round(run.peakRssKb / 1024),
      ratePerSecond: ratePerSecond ?? null,
      parallelism: options.parallelism,
      workers: run.workers,
      out,
      outRemoved,
      ...sharded,
      ok:
        check.lost === 0 &&
        check.duplicated === 0 &&
        check.phantom === 0 &&
        check.keysWithBadSequence === 0 &&
        leftOpen === 0 &&
        // A sharded run that did not get its zombie resumed and fenced showed nothing of it.
        (sharded === undefined || (sharded.zombie.resumed && sharded.zombie.fenced)),
    };
  } catch (error) {
    const where = outRemoved
      ? `its temp output ${out} was removed (--keep keeps it)`
      : options.out === undefined
        ? `its output is kept in ${out}`
        : `its output is kept in ${out}: the same command resumes it`;
    if (error instanceof StopRequested) throw new DemoInterruptedError(error.signal, where);
    // A failure with the output kept: where to look. Bad input needs no post-mortem.
    if (!outRemoved && !(error instanceof ConfigurationError)) console.error(`exactly demo: ${where}`);
    throw error;
  } finally {
    if (outRemoved) await rm(out, { recursive: true, force: true });
  }
}

/**
 * The checkpointing and the sink's guarantee. Unaligned checkpoints cannot back an
 * exactly-once sink (the job would refuse it): the guarantee follows the checkpointing
 * unless one is asked for.
 */
function deliveryOf(options: DemoOptions) {
  const checkpointing = parseCheckpointing(options.checkpointing ?? "exactly-once");
  const guaranteeName = options.guarantee ?? (checkpointing === "at-least-once" ? "at-least-once" : "exactly-once");
  const guarantee = parseGuarantee(guaranteeName);
  if (checkpointing === "at-least-once" && guarantee === DeliveryGuarantee.EXACTLY_ONCE) {
    throw new ConfigurationError(
      "--checkpointing",
      "at-least-once checkpointing cannot keep --guarantee exactly-once: drop --guarantee, or checkpoint exactly-once",
    );
  }
  return { checkpointing, guarantee, guaranteeName };
}

/**
 * The counts, checked again for a caller that is not the parser (which refuses each alone), and
 * together: the demo job runs --parallelism subtasks a stage in each of --shards processes, and
 * then in each of the rescaled layout's, all within its key groups.
 */
function checkCounts(options: DemoOptions): void {
  for (const [name, value, min, max] of [
    ["--records", options.records, 1, DEMO_MAX_RECORDS],
    ["--kills", options.kills, 0, DEMO_MAX_KILLS],
    ["--rate", options.rate ?? 0, 0, Number.MAX_SAFE_INTEGER],
    ["--parallelism", options.parallelism, 1, DEMO_MAX_PARALLELISM],
    ["--workers", options.workers ?? 1, 1, Number.MAX_SAFE_INTEGER],
    ["--shards", options.shards ?? 1, 1, Number.MAX_SAFE_INTEGER],
  ] as const) {
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new ConfigurationError(
        name,
        max === Number.MAX_SAFE_INTEGER
          ? `must be an integer ≥ ${min}, got ${value}`
          : `must be ${min} to ${max}, got ${value}`,
      );
    }
  }
  if (options.shards === undefined) return;
  const most = Math.floor(DEMO_MAX_PARALLELISM / options.parallelism);
  const rule = `shards × --parallelism at most ${DEMO_MAX_PARALLELISM}, the job's key groups`;
  if (most < rescaleTarget(1)) {
    throw new ConfigurationError(
      "--shards",
      `no shard count fits --parallelism ${options.parallelism} (${rule}, and the rescale from 1 runs 2): give --parallelism ${DEMO_MAX_PARALLELISM / 2} or less`,
    );
  }
  if (options.shards > most) {
    throw new ConfigurationError(
      "--shards",
      `must be 1 to ${most} with --parallelism ${options.parallelism} (${rule}), got ${options.shards}`,
    );
  }
  if (options.metricsPort !== undefined) {
    throw new ConfigurationError(
      "--metrics-port",
      `one port cannot serve the ${options.shards} shard processes of --shards: give one of the two`,
    );
  }
}

function sinkOf(sink: string | undefined): DemoSinkName {
  const name = sink ?? "file";
  if (!(DEMO_SINKS as readonly string[]).includes(name)) {
    throw new ConfigurationError("--sink", `must be ${DEMO_SINKS.join(", ")}; got ${name}`);
  }
  return name as DemoSinkName;
}

function parseCheckpointing(value: string): CheckpointingMode {
  if (value === "exactly-once" || value === "at-least-once") return value;
  throw new ConfigurationError("--checkpointing", `must be exactly-once or at-least-once, got ${value}`);
}

function parseGuarantee(value: string): DeliveryGuarantee {
  if (value === "exactly-once") return DeliveryGuarantee.EXACTLY_ONCE;
  if (value === "at-least-once") return DeliveryGuarantee.AT_LEAST_ONCE;
  throw new ConfigurationError("--guarantee", `must be exactly-once or at-least-once, got ${value}`);
}

function isSharded(run: SupervisedRun | ShardedRun): run is ShardedRun {
  return "shards" in run;
}
