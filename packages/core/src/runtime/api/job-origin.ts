/**
 * Which module a job was loaded from (`loadJob` in job-module.ts), so that a worker thread
 * can import it again and build the same job. Kept apart from the loader, and keyed by the
 * job object rather than its class, so the builder and the engine can ask without importing
 * either.
 */
import type { ShardLeaseOptions } from "../../shards/shard-lease.ts";
import type { ShardSpec } from "../../shards/shard-spec.ts";

/** Where a loaded job came from: enough for another thread to build it again. @internal */
export interface JobOrigin {
  /** The module's file URL. */
  readonly url: string;
  /** The export that built the job. */
  readonly export: string;
  /** The settings it was built with. */
  readonly params: Readonly<Record<string, unknown>>;
  /** The shard it was loaded as, if any, and the lease timing it was given. */
  readonly shard?: ShardSpec;
  readonly lease?: ShardLeaseOptions;
  /** The group it runs, of a job with repartitions. */
  readonly group?: string;
}

const origins = new WeakMap<object, JobOrigin>();

/** The module a job (a `StreamJob`) was loaded from by loadJob; undefined for a job built inline. @internal */
export function originOf(job: object): JobOrigin | undefined {
  return origins.get(job);
}

export function rememberOrigin(job: object, origin: JobOrigin): void {
  origins.set(job, origin);
}
