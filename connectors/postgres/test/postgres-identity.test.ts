// I10 against the real server: a PostgresTwoPhaseSink job killed after a checkpoint that holds
// its prepared transaction became durable, then started again with the sink renamed. Without
// renamedFrom the job is refused and the prepared transaction stays as it was (the review saw
// it dropped: 120 of 4,000 ids missing, the transaction left prepared, exit 0); with it, the
// renamed sink commits it and every id is in the table once.

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigurationError, GeneratorSource, StreamJob, silentLogger } from "@exactly/core";
import { pgUrl } from "@exactly/testkit/endpoints";
import { runFixture } from "@exactly/testkit/run-fixture";
import { afterEach, describe, expect, it } from "vitest";
import { recordsSink } from "./fixtures/records-sink.ts";
import type { TwoPhaseJobConfig } from "./fixtures/two-phase-job.ts";
import {
  committedIds,
  createRecordsTable,
  dropTable,
  preparedUnder,
  rollbackPreparedUnder,
  tableNameFor,
} from "./helpers.ts";

const fixture = fileURLToPath(new URL("./fixtures/two-phase-job.ts", import.meta.url));
const RECORDS = 40_000;

/** The fixture's job again, bounded, with its sink stage named `stage` (the fixture's is "pg-out"). */
function restartedJob(config: TwoPhaseJobConfig, stage: string, renamedFrom?: string): StreamJob {
  const job = new StreamJob({
    name: "pg-two-phase-job",
    checkpoint: { storage: config.checkpoints, intervalMs: 200 },
    restart: { maxRestarts: 0 },
    logger: silentLogger,
  });
  job
    .fromSource(
      new GeneratorSource({
        name: "ids",
        count: RECORDS,
        generate: (id) => ({ id, key: `k${id % 100}`, version: 1, payload: "x" }),
      }),
      { uid: "ids" },
    )
    .sinkTo(() => recordsSink(config), { name: stage, ...(renamedFrom === undefined ? {} : { renamedFrom }) });
  return job;
}

describe("I10: a renamed Postgres two-phase sink and the prepared transaction a checkpoint holds", () => {
  const tables: string[] = [];
  const sinks: string[] = [];
  afterEach(async () => {
    for (const sink of sinks.splice(0)) await rollbackPreparedUnder(pgUrl(), sink);
    for (const table of tables.splice(0)) await dropTable(pgUrl(), table);
  });

  it("is refused without renamedFrom, leaving the transaction prepared; with it, commits it: every id once, nothing left prepared", async () => {
    const table = tableNameFor();
    const config: TwoPhaseJobConfig = {
      url: pgUrl(),
      table,
      sinkName: `renamed-${table}`,
      checkpoints: await mkdtemp(join(tmpdir(), "exactly-pg-identity-")),
    };
    tables.push(table);
    sinks.push(config.sinkName);
    await createRecordsTable(pgUrl(), table);
    const run = await runFixture(fixture, {
      PG_JOB: JSON.stringify(config),
      EXACTLY_FAULT: "after-checkpoint-durable@3",
    });
    expect(run.signal, run.stderr.slice(-2000)).toBe("SIGKILL");
    const prepared = await preparedUnder(pgUrl(), config.sinkName);
    expect(prepared.length).toBeGreaterThan(0);

    const refused = await restartedJob(config, "pg-renamed")
      .execute()
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConfigurationError);
    expect((refused as Error).message).toMatch(/sink "pg-out"/);
    expect((await preparedUnder(pgUrl(), config.sinkName)).sort()).toEqual([...prepared].sort());

    await restartedJob(config, "pg-renamed", "pg-out").execute();
    expect(await preparedUnder(pgUrl(), config.sinkName)).toEqual([]);
    const ids = (await committedIds(pgUrl(), table)).sort((a, b) => a - b);
    expect(ids.length).toBe(RECORDS);
    expect(ids).toEqual(Array.from({ length: RECORDS }, (_, i) => i));
  });
});
