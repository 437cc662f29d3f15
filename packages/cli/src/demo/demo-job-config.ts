import type { CheckpointingMode, DeliveryGuarantee } from "@exactly/core";
import { DEMO_CHECKPOINT_DIR } from "../demo-checkpoints.ts";
import type { DemoSinkName } from "./demo-options.ts";

/** The hidden folder of the output directory that holds the checkpoints, unless a target keeps them elsewhere. */
export const CHECKPOINT_DIR = DEMO_CHECKPOINT_DIR;
export const DEMO_JOB_NAME = "exactly-demo";
/**
 * The demo job's key groups (its maxParallelism): every stage runs at most this many subtasks
 * over all its shards, so `--parallelism` × `--shards` is refused above it, in the demo command,
 * before any process starts.
 */
export const DEMO_MAX_PARALLELISM = 128;
/**
 * The demo job's lease where a successor must wait it out (a shard's standby; a restarted
 * child on a system that cannot tell the killed one is gone): short, so it starts within seconds.
 */
export const DEMO_LEASE_MS = 2_000;

/** What the demo job is built from: the command makes it, the worker process reads it as JSON. */
export interface DemoJobConfig {
  readonly records: number;
  readonly out: string;
  readonly parallelism: number;
  readonly guarantee: DeliveryGuarantee;
  /** Barrier alignment; default "exactly-once". */
  readonly checkpointing?: CheckpointingMode;
  readonly checkpointIntervalMs: number;
  readonly keys: number;
  /** Records per second over the whole job; undefined for as fast as possible. */
  readonly ratePerSecond: number | undefined;
  /** Where the job writes, and the settings its target made from the flags; default rolling files in `out`. */
  readonly target?: { readonly sink: DemoSinkName; readonly settings: object };
  /** The worker serves the job's metrics on this port (see metrics/prometheus-metrics.ts). */
  readonly metricsPort?: number;
  /** Worker threads (StreamJobOptions.workers); undefined for the machine's cores. */
  readonly workers?: number;
  /** The shard this process runs (`exactly demo --shards N` runs N processes), and its lease. */
  readonly shard?: { readonly index: number; readonly count: number };
  readonly leaseMs?: number;
}
