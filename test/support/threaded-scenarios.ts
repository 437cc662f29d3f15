import type { ScenarioName } from "@exactly/conformance";

/**
 * The scenarios that `pnpm test` runs a second time on two worker threads for the Postgres,
 * Redis and S3 sinks (the local file and Kafka sinks run their whole suites there). Every
 * suite's own `worker-threads` scenario already kills at each fault point with subtasks on two
 * threads; these add what that one does not: commits and recovery that a kill cuts through,
 * a changing parallelism (and pending work restored into a subtask that does not clean up its
 * index), random moments, and load at parallelism 4, all across threads.
 * The whole suites on threads take about twelve minutes more, so they run only with
 * EXACTLY_CONFORMANCE=full, which also selects the full profile.
 */
export function threadedScenarios(): readonly ScenarioName[] | undefined {
  if (process.env.EXACTLY_CONFORMANCE === "full") return undefined;
  return [
    "crash-mid-commit",
    "kill-inside-commit",
    "rescale-up",
    "rescale-down",
    "restore-across-owners",
    "random-kills",
    "volume",
    "chaos",
  ];
}
