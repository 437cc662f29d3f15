// The Postgres sinks against the real server: jobs write every record once (append and
// upsert, both exactly-once sinks), consecutive checkpoints upserting the same keys do not
// stall behind the prepared rows' locks, the startup checks refuse what cannot work (I7),
// a bad record fails the job naming its position, column and SQLSTATE with nothing of its
// checkpoint visible, and a commit whose outcome was lost is settled from the server.

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ConfigurationError,
  DeliveryGuarantee,
  GeneratorSource,
  RecordWriteError,
  type SinkContext,
  type SinkFactory,
  StreamJob,
  silentLogger,
  TransactionLostError,
} from "@exactly/core";
import { pgUrl } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import { startScratchCluster } from "@exactly/testkit/postgres/scratch-cluster";
import { sinkContext } from "@exactly/testkit/sink-context";
import { afterAll, describe, expect, it } from "vitest";
import { PostgresTwoPhaseSink, postgresSink, RowRejectedError, sqlstateOf, type TableMapping } from "../src/index.ts";
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
  id: number | string;
  key: string;
  version: number;
  payload: string;
}

const KINDS = ["two-phase", "write-ahead"] as const;
const tables: string[] = [];
const names: string[] = [];

function freshTable(): string {
  const table = tableNameFor();
  tables.push(table);
  return table;
}

function freshName(label: string): string {
  const name = uniqueName(`test-${label}`);
  names.push(name);
  return name;
}

afterAll(async () => {
  for (const name of names) await rollbackPreparedUnder(pgUrl(), name);
  for (const table of tables) await dropTable(pgUrl(), table);
});

function mapping(table: string, write: TableMapping<Row>["write"] = "append"): TableMapping<Row> {
  return {
    table,
    columns: [...RECORD_COLUMNS],
    write,
  };
}

/** The first error of `type` in the chain of causes (a job's failure wraps what failed it). */
function causeOf<E>(error: unknown, type: abstract new (...args: never[]) => E): E | undefined {
  for (let e = error; e instanceof Error; e = e.cause) if (e instanceof type) return e;
  return undefined;
}

/**
 * Checkpoints commit a prefix of each of the source's 4 splits (id mod 4), so committed ids
 * are, per split, s, s + 4, s + 8 … without a gap; a checkpoint committed in part would leave one.
 */
function expectWholeCheckpoints(ids: readonly number[]): void {
  for (let split = 0; split < 4; split++) {
    const mine = ids.filter((id) => id % 4 === split).sort((a, b) => a - b);
    expect(mine).toEqual(mine.map((_id, i) => split + 4 * i));
  }
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e: unknown) => e,
  );
}

const record =
  (keys: number) =>
  (i: number): Row => ({ id: i, key: `k${i % keys}`, version: Math.floor(i / keys), payload: `p${i}` });

async function runJob(options: {
  table: string;
  kind: (typeof KINDS)[number];
  guarantee?: DeliveryGuarantee;
  write?: TableMapping<Row>["write"];
  records: number;
  keys?: number;
  storage?: string;
  intervalMs?: number;
  generate?: (i: number) => Row;
  filter?: (r: Row) => boolean;
  name?: string;
  ratePerSecond?: number;
  deadLetterTable?: string;
  checkpointTimeoutMs?: number;
  maxRestarts?: number;
  /** A second sink on the same stream. */
  alongside?: SinkFactory<Row>;
  onRestart?: (error: unknown) => void;
}) {
  const job = new StreamJob({
    name: "postgres-sink-job",
    parallelism: 2,
    checkpoint: {
      storage: options.storage ?? (await mkdtemp(join(tmpdir(), "exactly-pg-"))),
      intervalMs: options.intervalMs ?? 50,
      ...(options.checkpointTimeoutMs ? { timeoutMs: options.checkpointTimeoutMs } : {}),
    },
    restart: { maxRestarts: options.maxRestarts ?? 0, initialDelayMs: 50 },
    logger: silentLogger,
    batchSize: 500,
  });
  const source = job.fromSource(
    new GeneratorSource({
      count: options.records,
      splits: 4,
      ratePerSecond: options.ratePerSecond ?? 50_000,
      generate: options.generate ?? record(options.keys ?? 1_000_000),
    }),
  );
  if (options.alongside) source.sinkTo(options.alongside, { name: "alongside" });
  (options.filter ? source.filter(options.filter) : source).sinkTo(
    postgresSink<Row>({
      connection: pgUrl(),
      guarantee: options.guarantee ?? DeliveryGuarantee.EXACTLY_ONCE,
      exactlyOnce: options.kind,
      name: options.name ?? freshName(options.kind),
      table: mapping(options.table, options.write),
      flushRows: 2000,
      ...(options.deadLetterTable ? { deadLetter: { table: options.deadLetterTable } } : {}),
    }),
    { name: "pg-out" },
  );
  return job.execute({ onRestart: ({ error }) => options.onRestart?.(error) });
}

/** A sink that does nothing but hold subtask 0's snapshot of one checkpoint, once, until that checkpoint is declined. */
function stallingSink(checkpoint: number, ms: number): SinkFactory<Row> {
  let stalled = false;
  return () => {
    let subtask = -1;
    return {
      guarantee: DeliveryGuarantee.EXACTLY_ONCE,
      capabilities: { rescale: true, abortsLingering: true },
      open: async (context) => {
        subtask = context.subtask;
      },
      writeBatch: () => {},
      snapshotState: async (id) => {
        if (id === checkpoint && subtask === 0 && !stalled) {
          stalled = true;
          await new Promise((resolve) => setTimeout(resolve, ms));
        }
        return {};
      },
      notifyCheckpointComplete: async () => {},
      notifyCheckpointAborted: async () => {},
      close: async () => {},
    };
  };
}

describe("Postgres sinks", () => {
  it.each(KINDS)("%s: a job appends every record exactly once and leaves nothing prepared", async (kind) => {
    const table = freshTable();
    await createRecordsTable(pgUrl(), table);
    const name = freshName(kind);
    const result = await runJob({ table, kind, records: 20_000, name });
    expect(result.checkpointsCompleted).toBeGreaterThan(1);
    const ids = await committedIds(pgUrl(), table);
    expect(ids.length).toBe(20_000);
    expect(new Set(ids).size).toBe(20_000);
    expect(await preparedUnder(pgUrl(), name)).toEqual([]);
  });

  it.each(KINDS)(
    "%s: consecutive checkpoints upserting the same keys neither deadlock nor stall, and each key ends at its last record",
    async (kind) => {
      const table = freshTable();
      await createRecordsTable(pgUrl(), table, { uniqueId: false });
      await withClient(pgUrl(), (c) => c.query(`CREATE UNIQUE INDEX ON "${table}" (key)`));
      // 16 keys, checkpoints every 10 ms: each transaction upserts keys the one before still holds prepared.
      const result = await runJob({
        table,
        kind,
        records: 15_000,
        ratePerSecond: 5_000,
        keys: 16,
        intervalMs: 20,
        write: { upsertOn: ["key"] },
      });
      expect(result.checkpointsCompleted).toBeGreaterThan(10);
      const rows = await withClient(
        pgUrl(),
        async (c) => (await c.query(`SELECT key, id, version FROM "${table}"`)).rows,
      );
      expect(rows.length).toBe(16);
      for (const row of rows) {
        const k = Number(String(row.key).slice(1));
        const last = 14_999 - ((14_999 - k) % 16);
        expect({ key: row.key, id: Number(row.id), version: Number(row.version) }).toEqual({
          key: row.key,
          id: last,
          version: Math.floor(last / 16),
        });
      }
    },
  );

  it("two-phase: a declined checkpoint's prepared upserts hold their keys; the next checkpoint's upserts of them time out at the checkpoint timeout, the job restarts, and each key ends at its last record", async () => {
    const table = freshTable();
    await createRecordsTable(pgUrl(), table, { uniqueId: false });
    await withClient(pgUrl(), (c) => c.query(`CREATE UNIQUE INDEX ON "${table}" (key)`));
    const name = freshName("declined");
    const restarts: unknown[] = [];
    const result = await runJob({
      table,
      kind: "two-phase",
      name,
      records: 12_000,
      ratePerSecond: 4_000,
      keys: 16,
      intervalMs: 100,
      write: { upsertOn: ["key"] },
      // Checkpoint 3 is declined (another sink holds it past the timeout) after this sink prepared it.
      checkpointTimeoutMs: 1_000,
      alongside: stallingSink(3, 2_500),
      maxRestarts: 3,
      onRestart: (error) => restarts.push(error),
    });
    // Without the lock timeout the job would wait forever: checkpoint 4 cannot complete while
    // this sink's upserts wait for checkpoint 3's locks, and 3 commits only with a later one.
    expect(restarts.map(sqlstateOf)).toContain("55P03");
    expect(result.restarts).toBeGreaterThanOrEqual(1);
    const rows = await withClient(pgUrl(), async (c) => (await c.query(`SELECT key, id FROM "${table}"`)).rows);
    expect(rows.length).toBe(16);
    for (const row of rows) {
      const k = Number(String(row.key).slice(1));
      expect(Number(row.id)).toBe(11_999 - ((11_999 - k) % 16));
    }
    expect(await preparedUnder(pgUrl(), name)).toEqual([]);
  });

  it("AT_LEAST_ONCE appends every record at least once", async () => {
    const table = freshTable();
    await createRecordsTable(pgUrl(), table);
    await runJob({ table, kind: "two-phase", guarantee: DeliveryGuarantee.AT_LEAST_ONCE, records: 10_000 });
    expect(new Set(await committedIds(pgUrl(), table)).size).toBe(10_000);
  });
});

describe("startup checks (I7)", () => {
  it.each(KINDS)(
    "%s: a missing table, a missing column and an upsert key without a unique index are named",
    async (kind) => {
      const sinkOf = (table: TableMapping<Row>) =>
        postgresSink<Row>({ connection: pgUrl(), exactlyOnce: kind, name: freshName("checks"), table })();
      const missing = freshTable();
      const noTable = await rejection(sinkOf(mapping(missing)).open(sinkContext("checks")));
      expect(noTable).toBeInstanceOf(ConfigurationError);
      expect((noTable as ConfigurationError).setting).toBe("table.table");

      const table = freshTable();
      await createRecordsTable(pgUrl(), table);
      const extra: TableMapping<Row> = {
        ...mapping(table),
        columns: [...mapping(table).columns, { name: "nope", type: "text" }],
      };
      const noColumn = await rejection(sinkOf(extra).open(sinkContext("checks")));
      expect((noColumn as ConfigurationError).setting).toBe("table.columns");
      expect((noColumn as Error).message).toContain('"nope"');

      const noIndex = await rejection(sinkOf(mapping(table, { upsertOn: ["key"] })).open(sinkContext("checks")));
      expect((noIndex as ConfigurationError).setting).toBe("table.write.upsertOn");
    },
  );

  it("two-phase: refuses more pending transactions than max_prepared_transactions allows, naming the setting", async () => {
    const table = freshTable();
    await createRecordsTable(pgUrl(), table);
    const allowed = await withClient(pgUrl(), async (c) =>
      Number((await c.query("SHOW max_prepared_transactions")).rows[0]?.max_prepared_transactions),
    );
    expect(allowed).toBeGreaterThan(0);
    const sink = new PostgresTwoPhaseSink<Row>({
      connection: pgUrl(),
      name: freshName("mpt"),
      table: mapping(table),
      maxPendingCheckpoints: allowed,
    });
    const error = await rejection(sink.open(sinkContext("mpt", { parallelism: 2 })));
    await sink.close();
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("max_prepared_transactions");
    expect((error as Error).message).toContain("PostgresWriteAheadSink");
  });

  it("a server with max_prepared_transactions = 0 (as most managed Postgres): the two-phase sink refuses to start, naming the setting and the write-ahead sink; the write-ahead sink writes there", async () => {
    const server = await startScratchCluster({ max_prepared_transactions: 0 });
    try {
      const table = tableNameFor();
      await createRecordsTable(server.url, table);
      const twoPhase = new PostgresTwoPhaseSink<Row>({ connection: server.url, name: "mpt0", table: mapping(table) });
      const error = await rejection(twoPhase.open(sinkContext("mpt0")));
      await twoPhase.close();
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).setting).toBe("max_prepared_transactions");
      expect((error as Error).message).toContain("is 0 on the server");
      expect((error as Error).message).toContain("PostgresWriteAheadSink");

      const writeAhead = postgresSink<Row>({
        connection: server.url,
        exactlyOnce: "write-ahead",
        name: "wal0",
        table: mapping(table),
      })();
      const context = sinkContext("wal0", { storage: await storageFor() });
      await writeAhead.open(context);
      try {
        await writeAhead.writeBatch({
          values: [record(10)(1), record(10)(2)],
          positions: [1, 2].map((offset) => ({ source: "s", split: "0", offset })),
          timestamps: undefined,
        });
        await writeAhead.snapshotState(1);
        await writeAhead.notifyCheckpointComplete(1);
      } finally {
        await writeAhead.close();
      }
      expect((await committedIds(server.url, table)).sort()).toEqual([1, 2]);
    } finally {
      await server.stop();
    }
  });

  it.each(KINDS)(
    "%s: two sinks under one name in one database: the second refuses to start, naming `name`",
    async (kind) => {
      const table = freshTable();
      await createRecordsTable(pgUrl(), table);
      const name = freshName("dup");
      const options = {
        connection: pgUrl(),
        exactlyOnce: kind,
        name,
        table: mapping(table),
        nameLockWaitMs: 300,
      } as const;
      const first = postgresSink<Row>(options)();
      const second = postgresSink<Row>(options)();
      const context = sinkContext("dup", { storage: await storageFor() });
      await first.open(context);
      try {
        const error = await rejection(second.open(context));
        expect(error).toBeInstanceOf(ConfigurationError);
        expect((error as ConfigurationError).setting).toBe("name");
        expect((error as Error).message).toContain("exactly:");
      } finally {
        await first.close();
        await second.close();
      }
      // Once the first is closed the name is free again.
      const third = postgresSink<Row>(options)();
      await third.open(context);
      await third.close();
    },
  );
});

async function storageFor(): Promise<SinkContext["storage"]> {
  const { FileSystemCheckpointStorage } = await import("@exactly/core");
  return new FileSystemCheckpointStorage(await mkdtemp(join(tmpdir(), "exactly-pg-storage-")));
}

describe("bad input", () => {
  it.each(KINDS)(
    "%s: a record that cannot be encoded fails the job naming its position, column and SQLSTATE; nothing of its checkpoint shows; filtered, the job resumes exactly once",
    async (kind) => {
      const table = freshTable();
      await createRecordsTable(pgUrl(), table);
      const storage = await mkdtemp(join(tmpdir(), "exactly-pg-bad-"));
      const name = freshName("bad");
      const bad = 12_345;
      const generate = (i: number): Row => ({ ...record(1_000_000)(i), id: i === bad ? "not a number" : i });
      const error = await rejection(runJob({ table, kind, records: 40_000, storage, generate, name, intervalMs: 100 }));
      const write = causeOf(error, RecordWriteError);
      expect(write).toBeInstanceOf(RecordWriteError);
      expect(write?.position).toEqual({ source: "generator", split: String(bad % 4), offset: bad });
      expect(write?.message).toContain(`generator[${bad % 4}]@${bad}`);
      const rejected = write?.cause as RowRejectedError;
      expect(rejected).toBeInstanceOf(RowRejectedError);
      expect(rejected.column).toBe("id");
      expect(rejected.sqlstate).toBe("22P02");
      // Only whole completed checkpoints are visible, none past the bad record in its split.
      const before = await committedIds(pgUrl(), table);
      expectWholeCheckpoints(before);
      expect(Math.max(-1, ...before.filter((id) => id % 4 === bad % 4))).toBeLessThan(bad);

      // Filtered, the job resumes from its last checkpoint: every other record exactly once.
      await runJob({ table, kind, records: 40_000, storage, generate, name, filter: (r) => r.id !== "not a number" });
      const ids = await committedIds(pgUrl(), table);
      expect(ids.length).toBe(39_999);
      expect(new Set(ids).size).toBe(39_999);
      expect(ids.includes(bad)).toBe(false);
      expect(await preparedUnder(pgUrl(), name)).toEqual([]);
    },
  );

  it.each(KINDS)(
    "%s: a row the server refuses (a CHECK constraint) fails naming the record's position, the SQLSTATE and the constraint's message",
    async (kind) => {
      const table = freshTable();
      await createRecordsTable(pgUrl(), table);
      await withClient(pgUrl(), (c) => c.query(`ALTER TABLE "${table}" ADD CONSTRAINT no_777 CHECK (id <> 777)`));
      const name = freshName("check");
      const error = await rejection(runJob({ table, kind, records: 5_000, name, intervalMs: 60_000 }));
      const write = causeOf(error, RecordWriteError);
      expect(write).toBeInstanceOf(RecordWriteError);
      const rejected = write?.cause as RowRejectedError;
      expect(rejected).toBeInstanceOf(RowRejectedError);
      expect(rejected.sqlstate).toBe("23514");
      expect(rejected.message).toContain("no_777");
      // The two-phase sink meets the refusal while writing; the write-ahead sink at the commit,
      // from its log, which holds each row's position too.
      expect(write?.position).toEqual({ source: "generator", split: "1", offset: 777 });
      const visible = await committedIds(pgUrl(), table);
      if (kind === "two-phase") {
        expect(visible).toEqual([]);
      } else {
        // The checkpoint had completed: the other subtask's part of it committed, the refused one's did not.
        expectWholeCheckpoints(visible);
        expect(visible.some((id) => id % 4 === 777 % 4)).toBe(false);
      }
    },
  );
});

describe("dead-letter table (off by default)", () => {
  it.each(KINDS)(
    "%s: a record that cannot be encoded, one a CHECK refuses and a duplicate key go to the dead-letter table once each, with position, SQLSTATE and values; every other row is written once",
    async (kind) => {
      const table = freshTable();
      const deadLetterTable = freshTable();
      await createRecordsTable(pgUrl(), table, { uniqueId: true });
      await withClient(pgUrl(), (c) => c.query(`ALTER TABLE "${table}" ADD CONSTRAINT no_777 CHECK (id <> 777)`));
      const name = freshName("dlq");
      // 3000 repeats 2996's id: the same split, so the same subtask and, with one checkpoint, one transaction.
      const generate = (i: number): Row => ({
        ...record(1_000_000)(i),
        id: i === 1234 ? "not a number" : i === 3000 ? 2996 : i,
      });
      await runJob({ table, kind, records: 5_000, name, generate, intervalMs: 60_000, deadLetterTable });
      const ids = await committedIds(pgUrl(), table);
      expect(ids.length).toBe(4_997);
      expect(new Set(ids).size).toBe(4_997);
      for (const missing of [777, 1234, 3000]) expect(ids.includes(missing)).toBe(false);
      expect(ids.includes(2996)).toBe(true);

      const letters = await withClient(
        pgUrl(),
        async (c) =>
          (
            await c.query(
              `SELECT sink, source_position, sqlstate, column_name, error, row_values, record FROM "${deadLetterTable}" ORDER BY (source_position->>'offset')::bigint`,
            )
          ).rows,
      );
      expect(letters.map((l) => [l.source_position?.offset, l.sqlstate])).toEqual([
        [777, "23514"],
        [1234, "22P02"],
        [3000, "23505"],
      ]);
      for (const letter of letters) expect(letter.sink).toBe(name);
      const [check, encoding, duplicate] = letters;
      expect(check?.source_position).toEqual({ source: "generator", split: "1", offset: 777 });
      expect(check?.error).toContain("no_777");
      expect(check?.row_values).toEqual({ id: "777", key: "k777", version: "0", payload: "p777" });
      expect(encoding?.column_name).toBe("id");
      expect(encoding?.row_values).toBeNull();
      expect(encoding?.record).toEqual({ id: "not a number", key: "k1234", version: 0, payload: "p1234" });
      expect(duplicate?.error).toContain("(id)=(2996)");
      expect(duplicate?.row_values).toMatchObject({ id: "2996", payload: "p3000" });
      expect(await preparedUnder(pgUrl(), name)).toEqual([]);
    },
  );

  it("a refusal that is not about the row (a missing privilege) still fails the job, as a ConfigurationError at open", async () => {
    const table = freshTable();
    await createRecordsTable(pgUrl(), table);
    const role = `r_${table}`;
    await withClient(pgUrl(), async (c) => {
      await c.query(`CREATE ROLE "${role}" LOGIN`);
      await c.query(`GRANT SELECT ON "${table}" TO "${role}"`);
      // Enough to create the dead-letter table, not to write the target.
      await c.query(`GRANT CREATE ON SCHEMA public TO "${role}"`);
    });
    try {
      const url = new URL(pgUrl());
      url.username = role;
      const sink = postgresSink<Row>({
        connection: url.toString(),
        guarantee: DeliveryGuarantee.AT_LEAST_ONCE,
        table: mapping(table),
        deadLetter: { table: `dl_${table}` },
      })();
      const error = await rejection(
        (async () => {
          await sink.open(sinkContext("dlq-privilege"));
          try {
            await sink.writeBatch({
              values: [record(10)(1)],
              positions: [{ source: "s", split: "0", offset: 1 }],
              timestamps: undefined,
            });
            await sink.snapshotState(1);
          } finally {
            await sink.close();
          }
        })(),
      );
      // Not set aside as a dead letter: the role's missing INSERT is named before any row is written.
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).setting).toBe("table");
      expect((error as Error).message).toContain(`INSERT on public.${table}`);
      expect(await committedIds(pgUrl(), table)).toEqual([]);
    } finally {
      await withClient(pgUrl(), async (c) => {
        await c.query(`DROP TABLE IF EXISTS "dl_${table}"`);
        await c.query(`REVOKE ALL ON "${table}" FROM "${role}"`);
        await c.query(`REVOKE CREATE ON SCHEMA public FROM "${role}"`);
        await c.query(`DROP ROLE "${role}"`);
      });
    }
  });
});

describe("commits settled from the server", () => {
  async function preparedSink(table: string) {
    const name = freshName("settle");
    const sink = new PostgresTwoPhaseSink<Row>({ connection: pgUrl(), name, table: mapping(table) });
    await sink.open(sinkContext("settle"));
    const values = [0, 1, 2].map(record(10));
    await sink.writeBatch({
      values,
      positions: values.map((_v, i) => ({ source: "test", split: "0", offset: i })),
      timestamps: undefined,
    });
    await sink.snapshotState(1);
    return { sink, name, gid: `${name}:0:1` };
  }

  it("a commit connection cut during COMMIT PREPARED is retried on a new one, and the rows show once", async () => {
    const table = freshTable();
    await createRecordsTable(pgUrl(), table);
    const { sink, name } = await preparedSink(table);
    try {
      // The sink's commit connection exists from recovery; cut it from the server side.
      const cut = await withClient(
        pgUrl(),
        async (c) =>
          (
            await c.query(
              "SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE application_name = $1",
              [`exactly:${name}:0:commit`],
            )
          ).rows.length,
      );
      expect(cut).toBe(1);
      await sink.notifyCheckpointComplete(1);
      expect((await committedIds(pgUrl(), table)).sort()).toEqual([0, 1, 2]);
      expect(await preparedUnder(pgUrl(), name)).toEqual([]);
    } finally {
      await sink.close();
    }
  });

  it("a transaction committed behind the sink's back is settled by its marker; one rolled back is a TransactionLostError", async () => {
    const table = freshTable();
    await createRecordsTable(pgUrl(), table);
    const committed = await preparedSink(table);
    try {
      await withClient(pgUrl(), (c) => c.query(`COMMIT PREPARED '${committed.gid}'`));
      await committed.sink.notifyCheckpointComplete(1);
      expect((await committedIds(pgUrl(), table)).sort()).toEqual([0, 1, 2]);
    } finally {
      await committed.sink.close();
    }

    const other = freshTable();
    await createRecordsTable(pgUrl(), other);
    const lost = await preparedSink(other);
    try {
      await withClient(pgUrl(), (c) => c.query(`ROLLBACK PREPARED '${lost.gid}'`));
      const error = await rejection(lost.sink.notifyCheckpointComplete(1));
      expect(error).toBeInstanceOf(TransactionLostError);
      expect((error as Error).message).toContain(lost.gid);
    } finally {
      await lost.sink.close();
    }
  });
});
