/**
 * The Postgres connector's benchmark cases, one per child process:
 *   node test/bench/cases/postgres-cases.ts <case> <records> <dir>
 * Every case writes the same generated records into a fresh table of its own (EXACTLY_PG_URL):
 * the sinks through a job, the raw `pg` client on the same bulk paths without the runtime, and
 * the naive exactly-once loop a user would write (a transaction per batch, a statement per row).
 */
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { DeliveryGuarantee, GeneratorSource, StreamJob, silentLogger } from "@exactly/core";
import { postgresSink, type TableMapping } from "@exactly/postgres";
import pg from "pg";
import copyStreams from "pg-copy-streams";
import { benchRecord, executeAndReport, pace, report, resuming, runId } from "../bench-protocol.ts";

type BenchRecord = ReturnType<typeof benchRecord>;

const [name, recordsArg, dir] = process.argv.slice(2) as [string, string, string];
const records = Number(recordsArg);
const url = process.env.EXACTLY_PG_URL as string;
const table = `bench_${name.replace(/[^a-z0-9]+/g, "_")}_${runId(dir)}`;
/** Upserts go over this many keys, so each key is written many times. */
const KEYS = 100_000;
const upsertRecord = (id: number) => ({ ...benchRecord(id), key: id % KEYS });

async function withClient<T>(use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

async function createTable(upsert: boolean): Promise<void> {
  if (resuming) return;
  await withClient((c) =>
    c.query(
      `CREATE TABLE "${table}" (id bigint NOT NULL, key integer NOT NULL${upsert ? " PRIMARY KEY" : ""}, payload text)`,
    ),
  );
}

async function dropTable(): Promise<void> {
  await withClient((c) => c.query(`DROP TABLE IF EXISTS "${table}"`));
}

function mapping(upsert: boolean): TableMapping<BenchRecord> {
  return {
    table,
    columns: [
      { name: "id", type: "bigint" },
      { name: "key", type: "integer" },
      { name: "payload", type: "text" },
    ],
    write: upsert ? { upsertOn: ["key"] } : "append",
  };
}

async function framework(
  guarantee: DeliveryGuarantee,
  exactlyOnce: "two-phase" | "write-ahead",
  upsert: boolean,
): Promise<void> {
  await createTable(upsert);
  const job = new StreamJob({
    name: `bench-${name}`,
    checkpoint: { storage: join(dir, "checkpoints"), intervalMs: 1000 },
    logger: silentLogger,
  });
  job
    .fromSource(new GeneratorSource({ count: records, ...pace, generate: upsert ? upsertRecord : benchRecord }))
    .sinkTo(
      postgresSink<BenchRecord>({
        connection: url,
        guarantee,
        exactlyOnce,
        name: `bench-${runId(dir)}`,
        table: mapping(upsert),
      }),
      { name: "pg-out" },
    );
  await executeAndReport(job, records);
  await dropTable();
}

const copyLine = (r: BenchRecord) => `${r.id}\t${r.key}\t${r.payload}`;

/** The baseline: the same rows by COPY on one connection, 10,000 per statement, committed once. */
async function raw(): Promise<void> {
  await createTable(false);
  await withClient(async (client) => {
    const started = performance.now();
    await client.query("BEGIN");
    for (let start = 0; start < records; start += 10_000) {
      const lines: string[] = [];
      for (let id = start; id < Math.min(records, start + 10_000); id++) lines.push(`${copyLine(benchRecord(id))}\n`);
      await pipeline(
        Readable.from([lines.join("")]),
        client.query(copyStreams.from(`COPY "${table}" (id, key, payload) FROM STDIN`)),
      );
    }
    await client.query("COMMIT");
    report({ records, seconds: (performance.now() - started) / 1000, checkpointMs: [] });
  });
  await dropTable();
}

/** The upsert baseline: unnest statements of 5,000 rows, committed once. */
async function rawUpsert(): Promise<void> {
  await createTable(true);
  await withClient(async (client) => {
    const started = performance.now();
    await client.query("BEGIN");
    for (let start = 0; start < records; start += 5000) {
      const ids: number[] = [];
      const keys: number[] = [];
      const payloads: string[] = [];
      for (let id = start; id < Math.min(records, start + 5000); id++) {
        const r = upsertRecord(id);
        ids.push(r.id);
        keys.push(r.key);
        payloads.push(r.payload);
      }
      await client.query(
        `INSERT INTO "${table}" (id, key, payload) SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[])
         ON CONFLICT (key) DO UPDATE SET id = EXCLUDED.id, payload = EXCLUDED.payload`,
        [ids, keys, payloads],
      );
    }
    await client.query("COMMIT");
    report({ records, seconds: (performance.now() - started) / 1000, checkpointMs: [] });
  });
  await dropTable();
}

/** What a user writes for exactly-once alone: a transaction per batch of 1,024, a statement per row. */
async function naive(): Promise<void> {
  await createTable(true);
  await withClient(async (client) => {
    const started = performance.now();
    for (let start = 0; start < records; start += 1024) {
      await client.query("BEGIN");
      for (let id = start; id < Math.min(records, start + 1024); id++) {
        const r = upsertRecord(id);
        await client.query(
          `INSERT INTO "${table}" (id, key, payload) VALUES ($1, $2, $3)
           ON CONFLICT (key) DO UPDATE SET id = EXCLUDED.id, payload = EXCLUDED.payload`,
          [r.id, r.key, r.payload],
        );
      }
      await client.query("COMMIT");
    }
    report({ records, seconds: (performance.now() - started) / 1000, checkpointMs: [] });
  });
  await dropTable();
}

const cases: Record<string, () => Promise<void>> = {
  "two-phase append": () => framework(DeliveryGuarantee.EXACTLY_ONCE, "two-phase", false),
  "two-phase upsert": () => framework(DeliveryGuarantee.EXACTLY_ONCE, "two-phase", true),
  "write-ahead append": () => framework(DeliveryGuarantee.EXACTLY_ONCE, "write-ahead", false),
  "write-ahead upsert": () => framework(DeliveryGuarantee.EXACTLY_ONCE, "write-ahead", true),
  "at-least-once upsert": () => framework(DeliveryGuarantee.AT_LEAST_ONCE, "two-phase", true),
  "raw COPY": raw,
  "raw unnest upsert": rawUpsert,
  "naive (txn per batch, row by row)": naive,
};
const run = cases[name];
if (!run) throw new Error(`unknown case ${name}; cases: ${Object.keys(cases).join(", ")}`);
await run();
