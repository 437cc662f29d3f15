import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig, type TestProjectInlineConfiguration } from "vitest/config";
import LongestFirstSequencer from "./test/longest-first-sequencer.ts";

// Every Node process the tests start (vitest's workers, each conformance run's child, the CLI
// under test) keeps V8's compiled code of the modules it loads here, and the next one loads
// them from it: a child that is killed 3 checkpoints in spends most of its life loading
// modules, and the suites start thousands of them (docs/design.md §7). Node checks each entry
// against its source, so an edited file is compiled afresh.
process.env.NODE_COMPILE_CACHE ??= fileURLToPath(new URL("./node_modules/.cache/node-compile-cache", import.meta.url));

// Tests run against the TypeScript sources: the "@exactly/source" export condition points
// every workspace package at src/, so no build step is needed (child processes get the same
// condition from siblingScript in @exactly/core). Only "node" is added besides: listing
// "import" here would make pg's require("pg-pool") load pg-pool's ESM build.
const conditions = ["@exactly/source", "node"];
const servicesSetup = "packages/testkit/src/services/global-setup.ts";

// The tests that restart the Postgres server, the Kafka broker, Redis and S3 (and SIGKILL Redis
// and S3), which ends every session on them: they run before the rest. Each of the first four
// restarts a server none of the others uses, so they run side by side, beside the projects that
// use no server (core, conformance), which keep the other workers busy while the broker's test,
// the longest, runs; the Postgres service's own smoke test restarts Postgres too, so it runs
// after them, alone.
const serverRestarts = [
  "connectors/kafka/test/broker-crash.test.ts",
  "connectors/postgres/test/postgres-restart.test.ts",
  "connectors/redis/test/redis-faults.test.ts",
  "connectors/file/test/s3/s3-faults.test.ts",
];
const postgresSmokeRestart = ["packages/testkit/src/services/postgres/smoke.test.ts"];
const restarts = [...serverRestarts, ...postgresSmokeRestart];

function restartProject(name: string, include: string[], groupOrder: number): TestProjectInlineConfiguration {
  return { extends: true, test: { name, include, globalSetup: [servicesSetup], sequence: { groupOrder } } };
}

/**
 * One project a package. `server` projects resolve the test services first
 * (@exactly/testkit's global setup); the others need none, and `pnpm test:unit` runs only those.
 */
function project(
  name: string,
  include: string[],
  options: { server?: boolean; exclude?: string[]; besideRestarts?: boolean } = {},
): TestProjectInlineConfiguration {
  return {
    extends: true,
    test: {
      name,
      include,
      exclude: [...configDefaults.exclude, ...restarts, ...(options.exclude ?? [])],
      ...(options.server ? { globalSetup: [servicesSetup] } : {}),
      sequence: { groupOrder: options.besideRestarts ? 0 : 2 },
    },
  };
}

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ["@exactly/source"] } },
  test: {
    // EXACTLY_TEST_REPORT=<file> also writes vitest's JSON report there (.ci/run prints each file's cost from it).
    reporters: [
      "default",
      "./test/plain-summary-reporter.ts",
      ...(process.env.EXACTLY_TEST_REPORT
        ? [["json", { outputFile: process.env.EXACTLY_TEST_REPORT }] as ["json", { outputFile: string }]]
        : []),
    ],
    sequence: { sequencer: LongestFirstSequencer },
    testTimeout: 180_000,
    hookTimeout: 300_000,
    // Three test files at a time on the 2-core CI machine: a conformance scenario spends much
    // of its time waiting (on checkpoint intervals, held commits, killed children, servers),
    // so with two the machine stayed a quarter idle; with three the suite's own project took
    // 235 s instead of about 305 s and kept every verdict (docs/design.md §7). A scenario that
    // tests nothing under that load is retried, then reported skipped as inconclusive with
    // its reason, never passed: CI's summary lists every skip with its note.
    maxWorkers: 3,
    projects: [
      restartProject("services-restart", serverRestarts, 0),
      restartProject("services-restart-postgres-smoke", postgresSmokeRestart, 1),
      project("core", ["packages/core/test/**/*.test.ts"], { besideRestarts: true }),
      project("conformance", ["packages/conformance/test/**/*.test.ts"], { besideRestarts: true }),
      project("cli", ["packages/cli/test/**/*.test.ts"], { exclude: ["packages/cli/test/demo/servers/**"] }),
      // The demo against each sink's server.
      project("cli-services", ["packages/cli/test/demo/servers/**/*.test.ts"], { server: true }),
      project("file", ["connectors/file/test/**/*.test.ts"], { exclude: ["connectors/file/test/s3/**"] }),
      project("file-s3", ["connectors/file/test/s3/**/*.test.ts"], { server: true }),
      project("kafka", ["connectors/kafka/test/**/*.test.ts"], { server: true }),
      project("postgres", ["connectors/postgres/test/**/*.test.ts"], { server: true }),
      project("redis", ["connectors/redis/test/**/*.test.ts"], { server: true }),
      project("examples", ["examples/*/test/**/*.test.ts"], { server: true }),
      // Cross-package tests: recovery, installing the packed packages; under services/, each
      // connector installed alone and run against its server.
      project("e2e", ["test/e2e/**/*.test.ts"], { exclude: ["test/e2e/services/**"] }),
      project("e2e-services", ["test/e2e/services/**/*.test.ts"], { server: true }),
      // The test kit's own tests: one smoke test a service.
      project("testkit", ["packages/testkit/src/**/*.test.ts"], { server: true }),
    ],
  },
});
