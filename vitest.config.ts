import { defineConfig } from "vitest/config";

// Tests run against the TypeScript sources: the "@exactly/source" export condition points
// every workspace package at src/, so no build step is needed (child processes use the same
// condition, see packages/core/src/testing/child-process.ts).
const conditions = ["@exactly/source", "node", "import", "default"];

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
          include: [
            "packages/*/src/**/*.test.ts",
            "packages/*/test/**/*.test.ts",
            "connectors/file/test/**/*.test.ts",
            "test/e2e/**/*.test.ts",
          ],
        },
      },
      {
        extends: true,
        test: {
          name: "services",
          include: [
            "test/services/**/*.test.ts",
            "connectors/{kafka,postgres,redis}/test/**/*.test.ts",
            "connectors/file/test/s3/**/*.test.ts",
          ],
          globalSetup: ["test/services/global-setup.ts"],
        },
      },
    ],
  },
});
