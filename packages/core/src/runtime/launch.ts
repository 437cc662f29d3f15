/**
 * The launch decision: whether a job's attempts run every subtask on this event loop or on
 * worker threads (docs/design.md §2, Worker threads), and the start of the run that makes
 * them. The builder (api/) asks here, so it never imports the engine's threads.
 */
import { availableParallelism } from "node:os";
import type { CheckpointStorage } from "../checkpoint/checkpoint-storage.ts";
import { ConfigurationError } from "../errors.ts";
import type { JobOwner } from "../shards/job-owner.ts";
import type { JobGraph } from "./api/job-graph.ts";
import type { JobOrigin } from "./api/job-origin.ts";
import type { ExecutionOptions } from "./engine/execution.ts";
import { LocalExecution } from "./engine/local-execution.ts";
import { admitRestored, type JobIdentity } from "./engine/restore-identity.ts";
import { jobShape, workerCount } from "./engine/threads/placement.ts";
import { ThreadedExecution } from "./engine/threads/threaded-execution.ts";
import { type ExecutionPlan, type JobClient, type JobEvents, startJob } from "./runner/job-runner.ts";
import type { RestartStrategy } from "./runner/restart-strategy.ts";

/** What the launch decision reads from a job. */
export interface LaunchRequest {
  readonly jobName: string;
  readonly job: JobIdentity;
  /** Uids whose checkpointed state the job may start without (StreamJobOptions.allowNonRestoredState). */
  readonly allowNonRestoredState: readonly string[];
  readonly graph: JobGraph;
  /** The job's `workers` setting, if set. */
  readonly workers: number | undefined;
  /** Where the job was loaded from; undefined for a job built inline. */
  readonly origin: JobOrigin | undefined;
  /** The job's checkpoint location as configured, which every worker must build the same. */
  readonly checkpointLocation: unknown;
}

/**
 * The worker threads a job runs on: `workers` (default: every core for a job loaded from a
 * module, one for a job built inline), never more than its largest stage's parallelism. One
 * means every subtask on this event loop. More than one for a job built inline is refused:
 * worker threads cannot share its closures.
 */
export function workerThreads(request: LaunchRequest): number {
  const { graph, origin } = request;
  const asked = request.workers ?? (origin ? availableParallelism() : 1);
  const workers = workerCount(graph, asked);
  if (workers > 1 && !origin) {
    throw new ConfigurationError(
      "workers",
      `job ${request.jobName} was built inline, and worker threads cannot share its closures: ` +
        "export a function that builds it from a module and start it with loadJob(module) (or exactly run), " +
        "or set workers to 1",
    );
  }
  return workers;
}

/** Starts the run of a job: every attempt on one event loop, or every attempt on worker threads. */
export function launch(
  request: LaunchRequest,
  setup: {
    base: Omit<ExecutionOptions, "listener">;
    restart: RestartStrategy;
    storage: CheckpointStorage;
    owner?: JobOwner | undefined;
  },
  events: JobEvents,
): JobClient {
  const { graph, origin } = request;
  const workers = workerThreads(request);
  const plan: ExecutionPlan = {
    maxParallelism: graph.maxParallelism,
    admit: (restored) => admitRestored(restored, graph, request.job, request.allowNonRestoredState, setup.base.logger),
    create:
      workers > 1
        ? (options, restored) =>
            new ThreadedExecution(graph, options, restored, {
              origin: origin as JobOrigin,
              workers,
              shape: jobShape(graph, request.checkpointLocation),
            })
        : (options, restored) => new LocalExecution(graph, options, restored),
  };
  return startJob(plan, setup.base, setup.restart, events, setup.base.logger, setup.storage, setup.owner);
}
