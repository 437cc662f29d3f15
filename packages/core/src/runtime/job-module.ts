/**
 * A job defined in a module: an export that builds the StreamJob when called. This is how a
 * job is written to be run by `exactly run`, and what lets every worker thread build the same
 * graph (closures cannot cross threads; a module URL can), as Flink ships one JAR to every
 * TaskManager. `loadJob` remembers where a job came from, so that the runtime can have a
 * worker import it again.
 */
import { pathToFileURL } from "node:url";
import { ConfigurationError } from "../errors.ts";
import { consoleLogger, type Logger } from "../logger.ts";
import { type JobMetrics, noMetrics } from "../metrics.ts";
import { StreamJob } from "./stream-job.ts";

/** What the runtime hands a job module: the job passes both into its `StreamJobOptions`. */
export interface JobRuntime {
  readonly logger: Logger;
  readonly metrics: JobMetrics;
}

/**
 * A module's export that builds a job (sources, stages, sinks) without starting it, passing
 * `runtime.logger` and `runtime.metrics` into `StreamJobOptions`. It may be called more than
 * once, in different threads: it must not start anything or share clients through globals.
 */
export type JobModule = (runtime: JobRuntime) => StreamJob | Promise<StreamJob>;

/** Where a loaded job came from: enough for another thread to build it again. */
export interface JobOrigin {
  /** The module's file URL. */
  readonly url: string;
  /** The export that built the job. */
  readonly export: string;
}

const origins = new WeakMap<StreamJob, JobOrigin>();

/** The module a job was loaded from by {@link loadJob}; undefined for a job built inline. */
export function originOf(job: StreamJob): JobOrigin | undefined {
  return origins.get(job);
}

export interface LoadJobOptions {
  /** The export holding the {@link JobModule}. Default `default`. */
  readonly export?: string;
  /** Default: the console logger and no metrics. */
  readonly runtime?: Partial<JobRuntime>;
}

/**
 * Imports a job module (a path, relative to the working directory, or a URL), calls its
 * export and returns the job, remembering its origin. Errors name the `export` setting.
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
  };
  const job: unknown = await (build as JobModule)(runtime);
  if (!(job instanceof StreamJob)) {
    throw new ConfigurationError("export", `${module}'s ${exportName} must return a StreamJob`);
  }
  origins.set(job, { url, export: exportName });
  return job;
}
