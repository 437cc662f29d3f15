// I9 for the Postgres sinks, against the real server: in a sharded job an owner superseded by
// a newer epoch has its next pre-commit (two-phase) or commit (write-ahead) refused, nothing
// of it visible and nothing left prepared; the race of an old owner that read its fence just
// before the successor raised it leaves nothing behind and does not stall the successor; and
// a sink without ownership issues no fence statement at all (no fence table appears).

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type Batch,
  DeliveryGuarantee,
  FileSystemCheckpointStorage,
  ShardFencedError,
  type Sink,
  type SinkContext,
} from "@exactly/core";
import { pgUrl } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import { sinkContext } from "@exactly/testkit/sink-context";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { SinkFences } from "../src/fences.ts";
import { connectPostgres, FENCE_TABLE, postgresSink, type TableMapping } from "../src/index.ts";
import {
  committedIds,
  createRecordsTable,
  dropTable,
  preparedUnder,
  RECORD_COLUMNS,
  rollbackPreparedUnder,
  tableNameFor,
  withClient,
} from "./helpers.ts";

interface Row {
  id: number;
  key: string;
  version: number;
  payload: string;
}

const KINDS = ["two-phase", "write-ahead"] as const;
type Kind = (typeof KINDS)[number] | "at-least-once";
const tables: string[] = [];
// "fenced": the at-least-once sink goes by the sink's name in the job.
const names: string[] = ["fenced"];

// The at-least-once sink's fences go by the context's sink id, "fenced" in every test: each
// test begins without them (they outlive a test, as they outlive a lease).
beforeEach(async () => {
  await withClient(pgUrl(), (c) =>
    c.query(`DELETE FROM ${FENCE_TABLE} WHERE sink = 'fenced'`).catch((error: unknown) => {
      if ((error as { code?: string }).code !== "42P01") throw error;
    }),
  );
});

afterAll(async () => {
  for (const name of names) await rollbackPreparedUnder(pgUrl(), name);
  for (const table of tables) await dropTable(pgUrl(), table);
  await withClient(pgUrl(), (c) =>
    c.query(`DELETE FROM "public"."${FENCE_TABLE}" WHERE sink = ANY($1)`, [names]),
  ).catch(() => {});
});

async function fresh(label: string): Promise<{ table: string; name: string }> {
  const table = tableNameFor();
  tables.push(table);
  await createRecordsTable(pgUrl(), table, { uniqueId: true });
  const name = uniqueName(`fence-${label}`);
  names.push(name);
  return { table, name };
}

function sinkOf(kind: Kind, table: string, name: string, options: { bookkeepingSchema?: string } = {}): Sink<Row> {
  const mapping: TableMapping<Row> = { table, columns: [...RECORD_COLUMNS], write: "append" };
  if (kind === "at-least-once") {
    // Its fences and session go by the sink's name in the job.
    return postgresSink<Row>({
      connection: pgUrl(),
      guarantee: DeliveryGuarantee.AT_LEAST_ONCE,
      table: { ...mapping, write: { upsertOn: ["id"] } },
      flushRows: 1,
      ...options,
    })();
  }
  return postgresSink<Row>({
    connection: pgUrl(),
    exactlyOnce: kind,
    name,
    table: mapping,
    flushRows: 1,
    nameLockWaitMs: 5000,
    ...options,
  })();
}

function rows(ids: number[]): Batch<Row> {
  return {
    values: ids.map((id) => ({ id, key: `k${id}`, version: 1, payload: `p${id}` })),
    positions: ids.map((offset) => ({ source: "s", split: "0", offset })),
    timestamps: undefined,
  };
}

async function storage(): Promise<SinkContext["storage"]> {
  return new FileSystemCheckpointStorage(await mkdtemp(join(tmpdir(), "exactly-pg-fence-")));
}

function owned(epoch: number, shared: SinkContext["storage"], overrides: Partial<SinkContext> = {}): SinkContext {
  return sinkContext("fenced", {
    storage: shared,
    ownership: { shard: { index: 0, count: 1 }, epoch },
    ...overrides,
  });
}

/** The first error of `type` in the chain of causes. */
function causeOf<E>(error: unknown, type: abstract new (...args: never[]) => E): E | undefined {
  for (let e = error; e instanceof Error; e = e.cause) if (e instanceof type) return e;
  return undefined;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

const sorted = async (table: string) => (await committedIds(pgUrl(), table)).sort((a, b) => a - b);

/** A sink's commit: the two-phase sink pre-commits at the barrier, the write-ahead sink writes at completion. */
async function checkpoint(sink: Sink<Row>, id: number): Promise<unknown> {
  const state = await sink.snapshotState(id);
  await sink.notifyCheckpointComplete(id);
  return state;
}

/**
 * An owner at epoch 1 with records in flight, its successor at epoch 2 opening beside it (the
 * old one paused, its session alive): the successor ends that session, the old owner's next
 * commit fails, nothing of it shows, and the successor goes on.
 */
async function supersededOwner(kind: Kind, table: string, name: string): Promise<void> {
  const shared = await storage();
  const old = sinkOf(kind, table, name);
  await old.open(owned(1, shared));
  await old.writeBatch(rows([1, 2]));
  const state = await checkpoint(old, 1);
  await old.writeBatch(rows([3, 4]));

  const successor = sinkOf(kind, table, name);
  await successor.open(
    owned(2, shared, { restoredCheckpointId: 1, restoredStates: [state], allRestoredStates: [state] }),
  );
  try {
    // The two-phase sink's rows 3, 4 were in the old session's open transaction; the
    // write-ahead sink's are in its log, sent only at completion.
    const failure = await rejection(checkpoint(old, 2));
    if (kind === "write-ahead") expect(causeOf(failure, ShardFencedError)?.epoch).toBe(1);
    await old.close().catch(() => {});
    expect(await sorted(table)).toEqual([1, 2]);
    expect(await preparedUnder(pgUrl(), name)).toEqual([]);

    await successor.writeBatch(rows([3, 4, 5]));
    await checkpoint(successor, 2);
    expect(await sorted(table)).toEqual([1, 2, 3, 4, 5]);
  } finally {
    await successor.close();
  }
}

describe("I9: an owner superseded by a newer epoch", () => {
  it.each(KINDS)(
    "%s: the successor at epoch 2 ends the old owner's session; the old owner's next commit fails and nothing of it shows or stays prepared",
    async (kind) => {
      const { table, name } = await fresh(`same-${kind}`);
      await supersededOwner(kind, table, name);
    },
  );

  it.each(KINDS)(
    "%s: the same under a sink name too long for the session's application_name (63 bytes), which goes in cut with a hash",
    async (kind) => {
      const fixture = await fresh(`same-long-${kind}`);
      const name = `${fixture.name}-${"n".repeat(110 - fixture.name.length)}`;
      names.push(name);
      await supersededOwner(kind, fixture.table, name);
    },
  );

  it.each(KINDS)(
    "%s: after a rescale the old owner of index 1 keeps its session, and the fence the successor raised refuses its commit with ShardFencedError",
    async (kind) => {
      const { table, name } = await fresh(`rescale-${kind}`);
      const shared = await storage();
      const old = sinkOf(kind, table, name);
      await old.open(owned(1, shared, { subtask: 1, parallelism: 2 }));
      await old.writeBatch(rows([1, 2]));
      const state = await checkpoint(old, 1);
      await old.writeBatch(rows([3, 4]));

      // One subtask now: it restores old index 1 and cleans it up, so it raises fence 1 too.
      const successor = sinkOf(kind, table, name);
      await successor.open(
        owned(2, shared, {
          subtask: 0,
          parallelism: 1,
          previousParallelism: 2,
          restoredCheckpointId: 1,
          restoredStates: [state],
          allRestoredStates: [state],
        }),
      );
      try {
        const failure = await rejection(checkpoint(old, 2));
        expect(causeOf(failure, ShardFencedError)?.epoch).toBe(1);
        await old.close();
        expect(await sorted(table)).toEqual([1, 2]);
        expect(await preparedUnder(pgUrl(), name)).toEqual([]);
        const fences = await withClient(pgUrl(), (c) =>
          c.query(`SELECT subtask, epoch FROM "public"."${FENCE_TABLE}" WHERE sink = $1 ORDER BY subtask`, [name]),
        );
        expect(fences.rows.map((r) => [Number(r.subtask), Number(r.epoch)])).toEqual([
          [0, 2],
          [1, 2],
        ]);
      } finally {
        await successor.close();
      }
    },
  );

  it.each([...KINDS, "at-least-once"] as const)(
    "%s: a job run again from a fresh checkpoint location, whose epochs begin above the earlier run's, raises its fences",
    async (kind) => {
      const { table, name } = await fresh(`rerun-${kind}`);
      const earlier = sinkOf(kind, table, name);
      await earlier.open(owned(5, await storage()));
      await earlier.close();
      // The new run's epochs begin at its first layout's clock, above the earlier run's: its owners open and write.
      for (const epoch of [6, 7]) {
        const sink = sinkOf(kind, table, name);
        await sink.open(owned(epoch, await storage()));
        await sink.writeBatch(rows([epoch]));
        await checkpoint(sink, 1);
        await sink.close();
      }
      expect(await sorted(table)).toEqual([6, 7]);
    },
  );

  it("an owner that opens after a newer one raised its fence refuses to start, rolling nothing back", async () => {
    const { table, name } = await fresh("late");
    const shared = await storage();
    const newer = sinkOf("two-phase", table, name);
    await newer.open(owned(3, shared));
    await newer.writeBatch(rows([1]));
    await newer.snapshotState(1);
    await newer.close();
    expect(await preparedUnder(pgUrl(), name)).toEqual([`${name}:0:1`]);

    const older = sinkOf("two-phase", table, name);
    const error = await rejection(older.open(owned(2, shared)));
    await older.close().catch(() => {});
    expect(causeOf(error, ShardFencedError)?.epoch).toBe(2);
    // The newer owner's pre-committed transaction is still there for its recovery to commit.
    expect(await preparedUnder(pgUrl(), name)).toEqual([`${name}:0:1`]);
    await rollbackPreparedUnder(pgUrl(), name);
  });
});

/** Waits until a session of the sink waits for a lock (the successor's raise, blocked by the old owner's share lock). */
async function untilWaitingForLock(name: string): Promise<void> {
  for (;;) {
    const waiting = await withClient(pgUrl(), (c) =>
      c.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND starts_with(application_name, $1)",
        [`exactly:${name}`],
      ),
    );
    if (Number(waiting.rows[0]?.n) > 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("I9: the old owner read its fence, the successor raises it, the old owner goes on", () => {
  it("two-phase: the transaction the old owner prepares after the check is rolled back by the successor, which does not stall", async () => {
    const { table, name } = await fresh("race-2pc");
    const shared = await storage();
    // The old owner at epoch 1, statement by statement as its pre-commit runs them.
    const oldConnection = await connectPostgres(pgUrl());
    const oldFences = new SinkFences("public", name, { shard: { index: 0, count: 1 }, epoch: 1 });
    try {
      await oldFences.ensure(oldConnection);
      await oldFences.raise(
        oldConnection,
        [0],
        0,
        async () => {},
        () => {},
      );
      await oldConnection.query("BEGIN");
      await oldConnection.query(`INSERT INTO "${table}" (id, key, version, payload) VALUES (7, 'k7', 1, 'p7')`);
      await oldFences.check(oldConnection, 0);

      const successor = sinkOf("two-phase", table, name);
      const opening = successor.open(owned(2, shared));
      await untilWaitingForLock(name);
      // Checked at epoch 1 before the raise: prepared after it, holding the fence row's share lock.
      await oldConnection.query(`PREPARE TRANSACTION '${name}:0:7'`);
      await opening;
      try {
        expect(await preparedUnder(pgUrl(), name)).toEqual([]);
        expect(await sorted(table)).toEqual([]);
        // The old owner's next transaction is refused.
        await oldConnection.query("BEGIN");
        expect(causeOf(await rejection(oldFences.check(oldConnection, 0)), ShardFencedError)?.epoch).toBe(1);
        await oldConnection.query("ROLLBACK");

        await successor.writeBatch(rows([1, 2]));
        await checkpoint(successor, 1);
        expect(await sorted(table)).toEqual([1, 2]);
      } finally {
        await successor.close();
      }
    } finally {
      await oldConnection.close();
    }
  });

  it("write-ahead: the successor's raise waits for the old owner's commit in flight, then the old owner is refused", async () => {
    const { table, name } = await fresh("race-wal");
    const shared = await storage();
    const oldConnection = await connectPostgres(pgUrl());
    const oldFences = new SinkFences("public", name, { shard: { index: 0, count: 1 }, epoch: 1 });
    try {
      await oldFences.ensure(oldConnection);
      await oldFences.raise(
        oldConnection,
        [0],
        0,
        async () => {},
        () => {},
      );
      await oldConnection.query("BEGIN");
      await oldFences.check(oldConnection, 0);
      await oldConnection.query(`INSERT INTO "${table}" (id, key, version, payload) VALUES (7, 'k7', 1, 'p7')`);

      const successor = sinkOf("write-ahead", table, name);
      const opening = successor.open(owned(2, shared));
      await untilWaitingForLock(name);
      // A commit of a checkpoint completed before the takeover (the head fences every later one): harmless.
      await oldConnection.query("COMMIT");
      await opening;
      try {
        await oldConnection.query("BEGIN");
        expect(causeOf(await rejection(oldFences.check(oldConnection, 0)), ShardFencedError)?.epoch).toBe(1);
        await oldConnection.query("ROLLBACK");
        await successor.writeBatch(rows([1, 2]));
        await checkpoint(successor, 1);
        expect(await sorted(table)).toEqual([1, 2, 7]);
      } finally {
        await successor.close();
      }
    } finally {
      await oldConnection.close();
    }
  });
});

describe("I9: an old owner paused between its check and its PREPARE", () => {
  it("after a rescale its session still holds the fence row's share lock: the successor ends that session and opens, nothing of it shows", async () => {
    const { table, name } = await fresh("paused");
    const shared = await storage();
    // The old owner of index 1 at epoch 1, named as its sink's session is, stopped right after its check.
    const oldConnection = await connectPostgres(pgUrl(), `${name}:1`);
    const oldFences = new SinkFences("public", name, { shard: { index: 0, count: 1 }, epoch: 1 });
    try {
      await oldFences.ensure(oldConnection);
      await oldFences.raise(
        oldConnection,
        [1],
        1,
        async () => {},
        () => {},
      );
      await oldConnection.query("BEGIN");
      await oldConnection.query(`INSERT INTO "${table}" (id, key, version, payload) VALUES (7, 'k7', 1, 'p7')`);
      await oldFences.check(oldConnection, 1);

      // One subtask now, which fences index 1 too; it holds the name lock of index 0 only.
      const successor = sinkOf("two-phase", table, name);
      await successor.open(owned(2, shared, { subtask: 0, parallelism: 1, previousParallelism: 2 }));
      try {
        // Resumed, the old owner finds its session gone: it can neither prepare nor commit.
        expect(await rejection(oldConnection.query(`PREPARE TRANSACTION '${name}:1:5'`))).toBeTruthy();
        expect(await preparedUnder(pgUrl(), name)).toEqual([]);
        expect(await sorted(table)).toEqual([]);
        await successor.writeBatch(rows([1]));
        await checkpoint(successor, 1);
        expect(await sorted(table)).toEqual([1]);
      } finally {
        await successor.close();
      }
    } finally {
      await oldConnection.close();
    }
  });
});

describe("I9: the at-least-once sink", () => {
  it("an old owner's upsert after the successor opened is refused with ShardFencedError: it cannot leave a key at an older value", async () => {
    const { table, name } = await fresh("upsert-after");
    const shared = await storage();
    const old = sinkOf("at-least-once", table, name);
    await old.open(owned(1, shared));
    await old.writeBatch(rows([1]));
    await checkpoint(old, 1);

    const successor = sinkOf("at-least-once", table, name);
    await successor.open(owned(2, shared, { restoredCheckpointId: 1 }));
    try {
      await successor.writeBatch(rows([5]));
      await checkpoint(successor, 2);
      const failure = await rejection(
        (async () => {
          await old.writeBatch(rows([5, 6]));
          await old.snapshotState(2);
        })(),
      );
      expect(causeOf(failure, ShardFencedError)?.epoch).toBe(1);
      expect(await sorted(table)).toEqual([1, 5]);
    } finally {
      await old.close();
      await successor.close();
      await withClient(pgUrl(), (c) => c.query(`DELETE FROM "public"."${FENCE_TABLE}" WHERE sink = 'fenced'`));
    }
  });
});

describe("a job that is not sharded", () => {
  it.each([...KINDS, "at-least-once"] as const)(
    "%s: without ownership the sink issues no fence statement: no fence table appears",
    async (kind) => {
      const { table, name } = await fresh(`plain-${kind}`);
      const schema = uniqueName("fence_plain", "_").replaceAll("-", "_");
      try {
        const sink = sinkOf(kind, table, name, { bookkeepingSchema: schema });
        await sink.open(sinkContext("plain", { storage: await storage() }));
        try {
          await sink.writeBatch(rows([1, 2]));
          await checkpoint(sink, 1);
        } finally {
          await sink.close();
        }
        expect(await sorted(table)).toEqual([1, 2]);
        const found = await withClient(pgUrl(), (c) =>
          c.query("SELECT to_regclass($1) IS NOT NULL AS fences, to_regnamespace($2) IS NOT NULL AS schema", [
            `"${schema}"."${FENCE_TABLE}"`,
            `"${schema}"`,
          ]),
        );
        // The exactly-once sinks made their marker or progress table there; the at-least-once sink made nothing.
        expect(found.rows[0]).toEqual({ fences: false, schema: kind !== "at-least-once" });
      } finally {
        await withClient(pgUrl(), (c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`));
      }
    },
  );
});
