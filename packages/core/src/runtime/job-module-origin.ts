/**
 * Which module a job was loaded from (job-module.ts : loadJob), so that a worker thread can
 * import it again and build the same job. Kept apart from the loader so the job itself can
 * ask without importing the loader.
 */
import type { StreamJob } from "./stream-job.ts";

/** Where a loaded job came from: enough for another thread to build it again. */
export interface JobOrigin {
  /** The module's file URL. */
  readonly url: string;
  /** The export that built the job. */
  readonly export: string;
  /** The settings it was built with. */
  readonly params: Readonly<Record<string, unknown>>;
}

const origins = new WeakMap<StreamJob, JobOrigin>();

/** The module a job was loaded from by loadJob; undefined for a job built inline. */
export function originOf(job: StreamJob): JobOrigin | undefined {
  return origins.get(job);
}

export function rememberOrigin(job: StreamJob, origin: JobOrigin): void {
  origins.set(job, origin);
}
