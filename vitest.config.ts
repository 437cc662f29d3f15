import { configDefaults, defineConfig } from "vitest/config";

// Tests run against the TypeScript sources: the "@exactly/source" export condition points
// every workspace package at src/, so no build step is needed (child processes get the same
// condition from siblingScript in @exactly/core). Only "node" is added besides: listing
// "import" here would make pg's require("pg-pool") load pg-pool's ESM build.
const conditions = ["@exactly/source", "node"];
const services = { globalSetup: ["test/services/global-setup.ts"] };

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ["@exactly/source"] } },
  test: {
    reporters: ["default", "./test/plain-summary-reporter.ts"],
    testTimeout: 180_000,
    hookTimeout: 300_000,
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["packages/*/test/**/*.test.ts", "connectors/file/test/*.test.ts", "test/e2e/**/*.test.ts"],
          // End-to-end tests that need a server run in "services".
          exclude: [...configDefaults.exclude, "test/e2e/services/**", "packages/cli/test/demo/servers/**"],
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: "services",
          include: [
            "test/services/{kafka,redis,s3}/smoke.test.ts",
            "connectors/{kafka,postgres,redis}/test/**/*.test.ts",
            "connectors/file/test/s3/**/*.test.ts",
            "examples/*/test/**/*.test.ts",
            "packages/cli/test/demo/servers/*.test.ts",
            "test/e2e/services/**/*.test.ts",
          ],
          // The server-restart tests run alone, in "services-restart".
          exclude: [
            ...configDefaults.exclude,
            "connectors/kafka/test/broker-crash.test.ts",
            "connectors/postgres/test/postgres-restart.test.ts",
            "connectors/redis/test/redis-faults.test.ts",
            "connectors/file/test/s3/s3-faults.test.ts",
          ],
          ...services,
          sequence: { groupOrder: 1 },
        },
      },
      {
        // Restart the Postgres server, the Kafka broker, Redis and S3 (and SIGKILL Redis and S3), which ends every
        // session on them: runs before the rest.
        extends: true,
        test: {
          name: "services-restart",
          include: [
            "test/services/postgres/smoke.test.ts",
            "connectors/postgres/test/postgres-restart.test.ts",
            "connectors/kafka/test/broker-crash.test.ts",
            "connectors/redis/test/redis-faults.test.ts",
            "connectors/file/test/s3/s3-faults.test.ts",
          ],
          ...services,
          sequence: { groupOrder: 0 },
        },
      },
    ],
  },
});
