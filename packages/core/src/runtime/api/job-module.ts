/**
 * A job defined in a module: an export that builds the StreamJob when called. This is how a
 * job is written to be run by `exactly run`, and what lets every worker thread build the same
 * graph (closures cannot cross threads; a module URL can), as Flink ships one JAR to every
 * TaskManager. `loadJob` remembers where a job came from, so that the runtime can have a
 * worker import it again.
 */
import { pathToFileURL } from "node:url";
import { ConfigurationError } from "../../errors.ts";
import { consoleLogger, type Logger } from "../../logger.ts";
import { type JobMetrics, noMetrics } from "../../metrics.ts";
import type { ShardLeaseOptions } from "../../shards/shard-lease.ts";
import type { ShardSpec } from "../../shards/shard-spec.ts";
import { rememberOrigin } from "./job-origin.ts";
import { StreamJob } from "./stream-job.ts";

/** What the runtime hands a job module: the job passes both into its `StreamJobOptions`. @public */
export interface JobRuntime {
  readonly logger: Logger;
  readonly metrics: JobMetrics;
  /**
   * The settings the job was loaded with ({@link LoadJobOptions.params}): the same in every
   * thread that builds the job. Empty when none were given.
   */
  readonly params: Readonly<Record<string, unknown>>;
  /**
   * The shard this process runs (`exactly run --shard k/N`), so that a source can read only
   * that shard's partitions; undefined when the job runs whole. The runtime sets it on the
   * job itself: the module need not pass it on.
   */
  readonly shard: ShardSpec | undefined;
}

/**
 * A module's export that builds a job (sources, stages, sinks) without starting it, passing
 * `runtime.logger` and `runtime.metrics` into `StreamJobOptions`. It may be called more than
 * once, in different threads: it must not start anything or share clients through globals.
 * @public
 */
export type JobModule = (runtime: JobRuntime) => StreamJob | Promise<StreamJob>;

/** Options of {@link loadJob}. @public */
export interface LoadJobOptions {
  /** The export holding the {@link JobModule}. Default `default`. */
  readonly export?: string;
  /** Default: the console logger and no metrics. */
  readonly runtime?: Partial<Omit<JobRuntime, "params">>;
  /**
   * Settings handed to the export as `runtime.params`, and to every worker thread that builds
   * the job again: plain data (what structured clone keeps), no functions or clients.
   */
  readonly params?: Readonly<Record<string, unknown>>;
  /** Run the job as this shard of several (docs/design.md §2, Shards); handed to the module as `runtime.shard`. */
  readonly shard?: ShardSpec;
  /** Run this group of a job with repartitions (docs/design.md §2, Groups; `exactly run --group`). */
  readonly group?: string;
  /** The lease's timing (a shard's, or the checkpoint location's), over what the module set (`exactly run --lease-duration`). */
  readonly lease?: ShardLeaseOptions;
  /**
   * Uids whose checkpointed state the job may start without, beside those the module allows
   * (`exactly run --allow-non-restored-state`; StreamJobOptions.allowNonRestoredState).
   */
  readonly allowNonRestoredState?: readonly string[];
}

/**
 * Imports a job module (a path, relative to the working directory, or a URL), calls its
 * export and returns the job, remembering its origin. Errors name the `export` setting.
 * @public
 */
export async function loadJob(module: string | URL, options: LoadJobOptions = {}): Promise<StreamJob> {
  const url =
    module instanceof URL ? module.href : /^[a-z][a-z0-9+.-]+:/i.test(module) ? module : pathToFileURL(module).href;
  const exportName = options.export ?? "default";
  const loaded = (await import(url)) as Record<string, unknown>;
  const build = loaded[exportName];
  if (typeof build !== "function") {
    throw new ConfigurationError("export", `${module} has no function export named ${exportName}`);
  }
  const runtime: JobRuntime = {
    logger: options.runtime?.logger ?? consoleLogger,
    metrics: options.runtime?.metrics ?? noMetrics,
    params: options.params ?? {},
    shard: options.shard,
  };
  const job: unknown = await (build as JobModule)(runtime);
  if (!(job instanceof StreamJob)) {
    throw new ConfigurationError("export", `${module}'s ${exportName} must return a StreamJob`);
  }
  if (options.shard) job.assignShard(options.shard, options.lease);
  else if (options.lease) job.assignLease(options.lease);
  if (options.allowNonRestoredState) job.allowNonRestoredState(options.allowNonRestoredState);
  if (options.group !== undefined) job.assignGroup(options.group);
  rememberOrigin(job, {
    url,
    export: exportName,
    params: runtime.params,
    ...(options.shard ? { shard: options.shard } : {}),
    ...(options.lease ? { lease: options.lease } : {}),
    ...(options.group !== undefined ? { group: options.group } : {}),
  });
  return job;
}
