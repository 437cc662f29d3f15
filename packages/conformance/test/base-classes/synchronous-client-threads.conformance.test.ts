// The guide's SQLite sink with the job's subtasks on two worker threads (subtask i on thread
// i mod 2), beside its one-loop suite: the "threads" variant's scenarios, `zombie` among them,
// where a pause can catch a thread in the middle of a SQLite transaction holding the write
// lock (@exactly/testkit/variant-scenarios); every scenario in `pnpm test:full`.
import { variantScenarios } from "@exactly/testkit/variant-scenarios";
import { describe, it } from "vitest";
import { definition as sqlite } from "../../../../examples/sqlite-sink/src/sqlite-sink.ts";
import { conformanceSuite } from "../../src/index.ts";

conformanceSuite(
  { describe, it },
  { ...sqlite, name: "sqlite sink on two worker threads", workers: 2 },
  { only: variantScenarios("threads") },
);
