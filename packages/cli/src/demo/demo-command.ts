import { type ChildProcess, fork } from "node:child_process";
import { join } from "node:path";
import { type CheckpointingMode, ConfigurationError, DeliveryGuarantee } from "@exactly/core";
import { siblingScript } from "@exactly/core/internal";
import { SingleBar } from "cli-progress";
import { CHECKPOINT_DIR, type DemoJobConfig, parseCheckpointing, parseGuarantee } from "./demo-job.ts";
import { type DemoIdentity, prepareOut, previousDemo } from "./demo-out.ts";
import { DEMO_CONFIG_VARIABLE, type WorkerMessage } from "./demo-protocol.ts";
import { planKills } from "./kill-plan.ts";
import { type PostgresDemoSink, prepareDemoTable, verifyDemoTable } from "./postgres-target.ts";
import { clearDemoPrefix, type RedisDemoTarget, verifyDemoRedis } from "./redis-target.ts";
import { prepareS3Prefix, type S3DemoTarget, s3DemoTarget, verifyDemoS3 } from "./s3-target.ts";
import { type OutputCheck, verifyOutput } from "./verify-output.ts";

export interface DemoOptions {
  readonly records: number;
  readonly kills: number;
  readonly seed: number;
  readonly out?: string;
  readonly parallelism: number;
  /** Worker threads for the subtasks; default the machine's cores (at most the parallelism). */
  readonly workers?: number;
  /** "exactly-once" or "at-least-once"; default: what `checkpointing` can keep. */
  readonly guarantee?: string;
  /**
   * Barrier alignment of the job, "exactly-once" (default) or "at-least-once": unaligned,
   * the keyed stage's sequence numbers go wrong after a crash (with parallelism ≥ 2).
   */
  readonly checkpointing?: string;
  /** Records per second; 0 for unlimited; undefined for the default (see `defaultRate`). */
  readonly rate?: number;
  readonly json: boolean;
  readonly progress: boolean;
  /** Where the demo writes: "file" (default; rolling files in `out`), "postgres", "redis" or "s3". */
  readonly sink?: string;
  /** For --sink postgres: the server (default $EXACTLY_PG_URL), the table, and how exactly-once is kept. */
  readonly pgUrl?: string;
  readonly table?: string;
  readonly pgSink?: string;
  /** For --sink redis: the server (default $EXACTLY_REDIS_URL) and the prefix of every key written. */
  readonly redisUrl?: string;
  readonly keyPrefix?: string;
  /** For --sink s3: the server (default $EXACTLY_S3_ENDPOINT), bucket, prefix, and optional s3:// checkpoints. */
  readonly s3Endpoint?: string;
  readonly bucket?: string;
  readonly prefix?: string;
  readonly checkpoints?: string;
  /** Serve the job's metrics in Prometheus format on this port (`/metrics`), from the worker running it. */
  readonly metricsPort?: number;
}

export interface DemoSummary extends OutputCheck {
  readonly records: number;
  readonly guarantee: string;
  readonly checkpointing: CheckpointingMode;
  readonly seed: number;
  readonly kills: number;
  readonly recoveries: number;
  /** Recoveries that restored a completed checkpoint (the others started from scratch). */
  readonly restoredFromCheckpoint: number;
  readonly checkpoints: number;
  /** This run continued one that `out` held (a killed demo started again with the same settings). */
  readonly resumed: boolean;
  /** The checkpoint a resumed run started from; null when it found none complete (it started over). */
  readonly resumedFromCheckpoint: number | null;
  readonly elapsedSeconds: number;
  readonly recordsPerSecond: number;
  readonly peakRssMb: number;
  readonly ratePerSecond: number | null;
  readonly parallelism: number;
  /** Worker threads the job ran on (1: one event loop). */
  readonly workers: number;
  readonly out: string;
  readonly sink: DemoSinkKind;
  /** For --sink postgres: the table, the sink class, and prepared transactions of the demo left after it. */
  readonly table?: string;
  readonly pgSink?: string;
  readonly preparedLeft?: number;
  /** For --sink redis: the key prefix, and keys whose count is off. */
  readonly keyPrefix?: string;
  readonly keysWithWrongCount?: number;
  /** For --sink s3: where the part files are, where the checkpoints were, and uploads of the run left open. */
  readonly bucket?: string;
  readonly prefix?: string;
  readonly checkpointLocation?: string;
  readonly uploadsLeft?: number;
  readonly ok: boolean;
}

const SINKS = ["file", "postgres", "redis", "s3"] as const;
type DemoSinkKind = (typeof SINKS)[number];

/** Flags that belong to one --sink only. */
const SINK_FLAGS: ReadonlyArray<readonly [DemoSinkKind, string, keyof DemoOptions]> = [
  ["postgres", "--pg-url", "pgUrl"],
  ["postgres", "--table", "table"],
  ["postgres", "--pg-sink", "pgSink"],
  ["redis", "--redis-url", "redisUrl"],
  ["redis", "--key-prefix", "keyPrefix"],
  ["s3", "--s3-endpoint", "s3Endpoint"],
  ["s3", "--bucket", "bucket"],
  ["s3", "--prefix", "prefix"],
  ["s3", "--checkpoints", "checkpoints"],
];

function sinkOf(options: DemoOptions): DemoSinkKind {
  const sink = options.sink ?? "file";
  if (!(SINKS as readonly string[]).includes(sink)) throw new Error(`--sink must be ${SINKS.join(", ")}; got ${sink}`);
  for (const [owner, flag, name] of SINK_FLAGS) {
    if (owner !== sink && options[name] !== undefined) throw new Error(`${flag} only applies to --sink ${owner}`);
  }
  return sink as DemoSinkKind;
}

/** The Postgres target of `--sink postgres`, from the options. */
function postgresTarget(options: DemoOptions): PostgresDemoSink {
  const url = options.pgUrl ?? process.env.EXACTLY_PG_URL;
  if (!url) throw new Error("--pg-url: give the Postgres connection string (or set EXACTLY_PG_URL)");
  const exactlyOnce = options.pgSink ?? "two-phase";
  if (exactlyOnce !== "two-phase" && exactlyOnce !== "write-ahead") {
    throw new Error(`--pg-sink must be two-phase or write-ahead, got ${exactlyOnce}`);
  }
  return { url, table: options.table ?? "exactly_demo", exactlyOnce };
}

/** The Redis target of `--sink redis`, from the options. */
function redisTarget(options: DemoOptions): RedisDemoTarget {
  const url = options.redisUrl ?? process.env.EXACTLY_REDIS_URL;
  if (!url) throw new Error("--redis-url: give the Redis URL (or set EXACTLY_REDIS_URL)");
  const keyPrefix = options.keyPrefix ?? "exactly-demo";
  // The demo deletes every key under the prefix: an empty one would be the whole server.
  if (!/^[\w.:{}-]+$/.test(keyPrefix)) {
    throw new Error(
      `--key-prefix must be letters, digits and . _ - : { } only (the demo deletes <prefix>:*), got ${JSON.stringify(keyPrefix)}`,
    );
  }
  return { url, keyPrefix };
}

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
 * `exactly demo`: runs the demo job in a child process, kills it with SIGKILL at planned
 * moments and restarts it, then reads the committed output and counts lost and
 * duplicated records.
 */
export async function runDemo(options: DemoOptions): Promise<DemoSummary> {
  const checkpointing = parseCheckpointing(options.checkpointing ?? "exactly-once");
  // Unaligned checkpoints cannot back an exactly-once sink (the job would refuse it): the
  // demo's sink follows the checkpointing unless a guarantee is asked for.
  const guaranteeName = options.guarantee ?? (checkpointing === "at-least-once" ? "at-least-once" : "exactly-once");
  const guarantee = parseGuarantee(guaranteeName);
  if (checkpointing === "at-least-once" && guarantee === DeliveryGuarantee.EXACTLY_ONCE) {
    throw new ConfigurationError(
      "--checkpointing",
      "at-least-once checkpointing cannot keep --guarantee exactly-once: drop --guarantee, or checkpoint exactly-once",
    );
  }
  for (const [name, value, min] of [
    ["--records", options.records, 1],
    ["--kills", options.kills, 0],
    ["--parallelism", options.parallelism, 1],
    ["--workers", options.workers ?? 1, 0],
  ] as const) {
    if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer ≥ ${min}, got ${value}`);
  }
  const sink = sinkOf(options);
  const previous = await previousDemo(options.out);
  const postgres = sink === "postgres" ? postgresTarget(options) : undefined;
  const redis = sink === "redis" ? redisTarget(options) : undefined;
  // A resumed S3 run writes on under the prefix of the run it resumes (a new run gets a new one).
  const s3: S3DemoTarget | undefined =
    sink === "s3" ? s3DemoTarget({ ...options, prefix: options.prefix ?? previous?.prefix }) : undefined;
  const keys = 1024;
  const identity: DemoIdentity = {
    records: options.records,
    parallelism: options.parallelism,
    guarantee,
    ...(checkpointing === "at-least-once" ? { checkpointing } : {}),
    keys,
    sink,
    ...(postgres ? { table: postgres.table, pgSink: postgres.exactlyOnce } : {}),
    ...(redis ? { keyPrefix: redis.keyPrefix } : {}),
    ...(s3 ? { bucket: s3.bucket, prefix: s3.prefix, ...(s3.checkpoints ? { checkpoints: s3.checkpoints } : {}) } : {}),
  };
  // With --sink postgres, redis or s3, the output directory holds only the checkpoints (if any).
  // A resumed run keeps what the earlier run committed: the check covers the whole history.
  const { dir: out, resumed } = await prepareOut(options.out, identity);
  if (!resumed) {
    if (postgres) await prepareDemoTable(postgres);
    if (redis) await clearDemoPrefix(redis);
    if (s3) await prepareS3Prefix(s3);
  }
  const ratePerSecond =
    options.rate === undefined ? defaultRate(options.records, options.kills, checkpointing) : options.rate || undefined;
  const underLoad = options.kills > 0 && ratePerSecond === undefined;
  const config: DemoJobConfig = {
    ...(postgres ? { postgres } : {}),
    ...(redis ? { redis } : {}),
    ...(s3 ? { s3 } : {}),
    records: options.records,
    out,
    parallelism: options.parallelism,
    ...(options.workers === undefined ? {} : { workers: options.workers }),
    guarantee,
    checkpointing,
    checkpointIntervalMs: underLoad ? UNPACED_CHECKPOINT_INTERVAL_MS : CHECKPOINT_INTERVAL_MS,
    keys,
    ratePerSecond,
    ...(options.metricsPort === undefined ? {} : { metricsPort: options.metricsPort }),
  };
  const plan = planKills(options.kills, options.records, options.seed);
  const worker = siblingScript(import.meta.url, "demo-worker");
  const bar = options.progress
    ? new SingleBar({
        format:
          "demo |{bar}| {percentage}% read of {total} | checkpoints {checkpoints} | kills {killed}/{planned} | recoveries {recoveries}",
        stream: process.stderr,
        hideCursor: true,
        noTTYOutput: true,
        notTTYSchedule: 1000,
      })
    : undefined;
  bar?.start(options.records, 0, { checkpoints: 0, killed: 0, planned: plan.length, recoveries: 0 });

  const startedAt = Date.now();
  let killed = 0;
  let recoveries = 0;
  let restoredFromCheckpoint = 0;
  let resumedFrom: number | undefined;
  let checkpointsBefore = 0;
  let peakRssKb = 0;
  let workers = 1;
  for (let attempt = 1; ; attempt++) {
    let checkpointsNow = 0;
    let outcome: WorkerMessage | undefined;
    // The configuration holds the targets' URLs and keys: in the environment, not in argv,
    // where any local user reads it through ps or /proc/<pid>/cmdline.
    const child: ChildProcess = fork(worker.path, [], {
      env: { ...process.env, [DEMO_CONFIG_VARIABLE]: JSON.stringify(config) },
      execArgv: worker.execArgv,
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    let killScheduled = false;
    child.on("message", (message: WorkerMessage) => {
      switch (message.type) {
        case "started":
          workers = message.workers;
          if (message.restoredCheckpointId !== undefined && attempt > 1) restoredFromCheckpoint++;
          if (attempt === 1 && resumed) resumedFrom = message.restoredCheckpointId;
          break;
        case "restarted":
          recoveries++;
          break;
        case "progress": {
          checkpointsNow = message.checkpoints;
          peakRssKb = Math.max(peakRssKb, message.maxRssKb);
          bar?.update(Math.min(message.generated, options.records), {
            checkpoints: checkpointsBefore + checkpointsNow,
            killed,
            recoveries,
          });
          const next = plan[killed];
          if (next && !killScheduled && message.generated >= next.atRecord) {
            killScheduled = true;
            setTimeout(() => {
              if (child.exitCode === null && child.signalCode === null && child.kill("SIGKILL")) killed++;
            }, next.delayMs);
          }
          break;
        }
        case "finished":
        case "failed":
          outcome = message;
          break;
      }
    });
    const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
      child.on("exit", (c, s) => done({ code: c, signal: s })),
    );
    checkpointsBefore += checkpointsNow;
    if (signal === "SIGKILL") {
      recoveries++;
      continue;
    }
    if (outcome?.type === "finished" && code === 0) {
      checkpointsBefore += Math.max(0, outcome.checkpoints - checkpointsNow);
      break;
    }
    bar?.stop();
    const reason = outcome?.type === "failed" ? outcome.error : `exit code ${code}, signal ${signal}`;
    throw new Error(`demo worker failed: ${reason}`);
  }
  const elapsedSeconds = (Date.now() - startedAt) / 1000;
  bar?.update(options.records, { checkpoints: checkpointsBefore, killed, recoveries });
  bar?.stop();

  const check = postgres
    ? await verifyDemoTable(postgres, options.records)
    : redis
      ? await verifyDemoRedis(redis, options.records, keys)
      : s3
        ? await verifyDemoS3(s3, options.records)
        : await verifyOutput(out, options.records);
  const preparedLeft = "preparedLeft" in check ? (check.preparedLeft as number) : 0;
  const uploadsLeft = "uploadsLeft" in check ? (check.uploadsLeft as number) : 0;
  return {
    ...check,
    sink,
    ...(redis ? { keyPrefix: redis.keyPrefix } : {}),
    ...(s3
      ? {
          bucket: s3.bucket,
          prefix: s3.prefix,
          checkpointLocation: s3.checkpoints ?? join(out, CHECKPOINT_DIR),
          uploadsLeft,
        }
      : {}),
    ...(postgres ? { table: postgres.table, preparedLeft } : {}),
    // Only an exactly-once demo has a choice of sink class.
    ...(postgres && guarantee === DeliveryGuarantee.EXACTLY_ONCE ? { pgSink: postgres.exactlyOnce } : {}),
    records: options.records,
    guarantee: guaranteeName,
    checkpointing,
    seed: options.seed,
    resumed,
    resumedFromCheckpoint: resumedFrom ?? null,
    kills: killed,
    recoveries,
    restoredFromCheckpoint,
    checkpoints: checkpointsBefore,
    elapsedSeconds,
    recordsPerSecond: Math.round(options.records / elapsedSeconds),
    peakRssMb: Math.round(peakRssKb / 1024),
    ratePerSecond: config.ratePerSecond ?? null,
    parallelism: options.parallelism,
    workers,
    out,
    ok:
      check.lost === 0 &&
      check.duplicated === 0 &&
      check.phantom === 0 &&
      check.keysWithBadSequence === 0 &&
      preparedLeft === 0 &&
      uploadsLeft === 0,
  };
}

export function formatSummary(s: DemoSummary): string {
  const rows: Array<[string, string]> = [
    ["guarantee", s.guarantee],
    ["checkpointing", s.checkpointing],
    ["records in", String(s.records)],
    ["committed", String(s.committed)],
    ["lost", String(s.lost)],
    ["duplicated", String(s.duplicated)],
    ["phantom", String(s.phantom)],
    ["keyed state", s.keysWithBadSequence === 0 ? "consistent" : `${s.keysWithBadSequence} keys wrong`],
    ["checkpoints", String(s.checkpoints)],
    ["kills (SIGKILL)", `${s.kills} (seed ${s.seed})`],
    ["recoveries", `${s.recoveries} (${s.restoredFromCheckpoint} from a checkpoint)`],
    ...(s.resumed
      ? ([
          [
            "resumed",
            s.resumedFromCheckpoint === null
              ? "an earlier run in --out, which had no complete checkpoint: started over"
              : `an earlier run in --out, from its checkpoint ${s.resumedFromCheckpoint} (checked: the whole history)`,
          ],
        ] as Array<[string, string]>)
      : []),
    ["elapsed", `${s.elapsedSeconds.toFixed(1)} s`],
    ["records/s", `${s.recordsPerSecond}${s.ratePerSecond ? ` (source paced at ${s.ratePerSecond}/s)` : ""}`],
    ["peak RSS", `${s.peakRssMb} MB`],
    ["parallelism", `${s.parallelism} on ${s.workers === 1 ? "one event loop" : `${s.workers} worker threads`}`],
    ...(s.sink === "redis"
      ? ([
          [
            "output",
            `${s.keyPrefix}:counts (${s.guarantee === "exactly-once" ? "write-ahead" : "at-least-once"} sink), ${s.keyPrefix}:latest:<key> (upsert sink)`,
          ],
          ["keys miscounted", String(s.keysWithWrongCount)],
          ["checkpoints in", s.out],
        ] as Array<[string, string]>)
      : []),
    ...(s.sink === "s3"
      ? ([
          ["output", `s3://${s.bucket}/${s.prefix}/ (${s.files} part files)`],
          ["uploads left", String(s.uploadsLeft)],
          ["checkpoints in", s.checkpointLocation ?? s.out],
        ] as Array<[string, string]>)
      : []),
    ...(s.sink === "postgres"
      ? ([
          ["output", `table ${s.table} (${s.pgSink ? `${s.pgSink} sink` : "at-least-once sink"})`],
          ["prepared left", String(s.preparedLeft)],
          ["checkpoints in", s.out],
        ] as Array<[string, string]>)
      : s.sink === "file"
        ? ([["output", s.out]] as Array<[string, string]>)
        : []),
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const verdict = s.ok ? "OK: every record committed exactly once" : "NOT EXACTLY ONCE";
  return [...rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`), verdict].join("\n");
}
