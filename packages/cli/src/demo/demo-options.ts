/** What `exactly demo` takes (its flags) and what it reports (the summary, printed or as JSON). */
import type { CheckpointingMode } from "@exactly/core";
import type { OutputCheck } from "./verify-output.ts";

/** The values of `--sink`: one target each, under targets/. */
export const DEMO_SINKS = ["file", "postgres", "redis", "s3"] as const;
export type DemoSinkName = (typeof DEMO_SINKS)[number];

/** The records the demo job generates without --records. */
export const DEMO_DEFAULT_RECORDS = 1_000_000;
/**
 * The most records a demo job generates: its progress counter, shared by the worker threads,
 * and the check's table of ids are 32-bit.
 */
export const DEMO_MAX_RECORDS = 2 ** 31 - 1;
/**
 * The most kills a demo takes. A kill costs a restart and, paced, about 2 s of run (four
 * checkpoints between two kills), so 1,000 is a run of over half an hour; a larger number is
 * a typo, and the plan of a billion kills alone would not fit in memory.
 */
export const DEMO_MAX_KILLS = 1000;

export interface DemoOptions {
  readonly records: number;
  readonly kills: number;
  readonly seed: number;
  /** Where the output goes, kept after the run; without it, a temp directory removed after the run unless `keep`. */
  readonly out?: string;
  /** Keep the temp output directory (the one made without `out`) after the run. */
  readonly keep?: boolean;
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
  /** Run the job as this many shard processes (shard-supervisor.ts). */
  readonly shards?: number;
}

export interface DemoSummary extends OutputCheck {
  readonly records: number;
  readonly guarantee: string;
  readonly checkpointing: CheckpointingMode;
  readonly seed: number;
  /** SIGKILLs delivered. */
  readonly kills: number;
  /** --kills: more than `kills` when the run ended before the others landed, which the verdict says. */
  readonly killsAsked: number;
  /** Times the job started again after a kill or a failure. */
  readonly recoveries: number;
  /** Recoveries that restored a completed checkpoint (the others started from the beginning): never more than `recoveries`. */
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
  /** `out` was removed after the check (a temp directory, without --keep). */
  readonly outRemoved: boolean;
  readonly sink: DemoSinkName;
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
  /** With --shards: the shard counts before and after the rescale, and the shard paused past its lease. */
  readonly shards?: number;
  readonly rescaledTo?: number;
  readonly zombie?: { readonly shard: number; readonly resumed: boolean; readonly fenced: boolean };
  readonly ok: boolean;
}
