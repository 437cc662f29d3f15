/**
 * The Redis connector's benchmark cases, one per child process:
 *   node test/bench/cases/redis-cases.ts <case> <records> <dir>
 * Every case writes the same generated records under a fresh key prefix of its own
 * (EXACTLY_REDIS_URL), then deletes it: the sinks through a job, raw ioredis pipelines of the
 * same commands without the runtime, the naive loop (one awaited command per record), and each
 * exactly-once sink's script alone on the server (its calls encoded beforehand, raw RESP).
 * Upserts SET 100,000 keys, each many times; increments HINCRBY 100 fields of 1,000 hashes.
 */
import { createHash } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { SinkFactory } from "@exactly/core";
import { RedisAtLeastOnceSink, RedisUpsertSink, RedisWriteAheadSink } from "@exactly/redis";
import { Redis } from "ioredis";
import { SCRIPTS } from "../../../connectors/redis/src/lua/scripts.ts";
import { benchRecord, report, runId } from "../bench-protocol.ts";
import {
  type BenchRecord,
  counter,
  increment,
  runSinkJob,
  unlinkMatching,
  upsertKey,
  upsertMapping,
} from "./redis-bench-writes.ts";
import { type RawServer, resp, sendRaw } from "./redis-raw-calls.ts";

const [name, recordsArg, dir] = process.argv.slice(2) as [string, string, string];
const records = Number(recordsArg);
const url = process.env.EXACTLY_REDIS_URL as string;
const prefix = `bench:${name.replace(/[^a-z0-9]+/g, "-")}:${runId(dir)}:`;
/** Commands per raw pipeline, as the sinks send per flush. */
const PIPELINE = 1000;

async function withClient<T>(use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(url, { lazyConnect: true });
  await client.connect();
  try {
    return await use(client);
  } finally {
    client.disconnect();
  }
}

/** Deletes what the case wrote: its prefix, and the version keys (`{<key>}:exactly-version`). */
async function cleanUp(): Promise<void> {
  await withClient(async (client) => {
    for (const pattern of [`${prefix}*`, `{${prefix}*`]) await unlinkMatching(client, pattern);
  });
}

async function framework(sink: SinkFactory<BenchRecord>): Promise<void> {
  await runSinkJob(name, dir, records, sink);
  await cleanUp();
}

/** Raw pipelines of PIPELINE commands, one after another, without the runtime. */
async function raw(add: (pipeline: ReturnType<Redis["pipeline"]>, r: BenchRecord) => void): Promise<void> {
  await withClient(async (client) => {
    const started = performance.now();
    for (let start = 0; start < records; start += PIPELINE) {
      const pipeline = client.pipeline();
      for (let id = start; id < Math.min(records, start + PIPELINE); id++) add(pipeline, benchRecord(id));
      await pipeline.exec();
    }
    report({ records, seconds: (performance.now() - started) / 1000, checkpointMs: [] });
  });
  await cleanUp();
}

/** What a user writes first: one awaited SET per record. */
async function naive(): Promise<void> {
  await withClient(async (client) => {
    const started = performance.now();
    for (let id = 0; id < records; id++) {
      const r = benchRecord(id);
      await client.set(prefix + upsertKey(r), r.payload);
    }
    report({ records, seconds: (performance.now() - started) / 1000, checkpointMs: [] });
  });
  await cleanUp();
}

/**
 * A sink's script alone on the server, its ceiling: the calls the sink makes (the same
 * records, keys and calls of the same size), encoded before the clock starts and written as
 * RESP on a socket with CALLS_IN_FLIGHT of them out, so only the server's time is measured.
 */
const CALLS_IN_FLIGHT = 16;

/** The server of EXACTLY_REDIS_URL, for the raw calls. */
function rawServer(): RawServer {
  const { hostname, port, password, username } = new URL(url);
  return { host: hostname, port: Number(port || 6379), username, password };
}

async function sendTimed(setup: readonly Buffer[], commands: readonly Buffer[]): Promise<number> {
  const { started, ended } = await sendRaw(rawServer(), setup, commands, CALLS_IN_FLIGHT);
  return (ended - started) / 1000;
}

/** The upsert sink's guard script, 500 writes a call, as the sink sends a flush's records. */
async function guardCeiling(): Promise<void> {
  const sha = createHash("sha1").update(SCRIPTS.guardedUpsert).digest("hex");
  const setup = [resp(["SCRIPT", "LOAD", SCRIPTS.guardedUpsert])];
  const commands: Buffer[] = [];
  for (let start = 0; start < records; start += 500) {
    const keys: string[] = [];
    const args: (string | number)[] = ["string", 0, 0, ""];
    for (let id = start; id < Math.min(records, start + 500); id++) {
      const r = benchRecord(id);
      const key = prefix + upsertKey(r);
      keys.push(key, `{${key}}:exactly-version`);
      args.push(r.id, 1, r.payload);
    }
    commands.push(resp(["EVALSHA", sha, keys.length, ...keys, ...args]));
  }
  const seconds = await sendTimed(setup, commands);
  report({ records, seconds, checkpointMs: [] });
  await cleanUp();
}

/** The write-ahead sink's apply script, 1,000 increments a call, as the sink applies a checkpoint. */
async function applyCeiling(): Promise<void> {
  const sha = createHash("sha1").update(SCRIPTS.applyChunk).digest("hex");
  const setup = [resp(["SCRIPT", "LOAD", SCRIPTS.applyChunk])];
  const commands: Buffer[] = [];
  for (let first = 0; first < records; first += 1000) {
    const count = Math.min(1000, records - first);
    const keys = [`${prefix}exactly-wal:ceiling:0`];
    const args: (string | number)[] = [1, first, first + count >= records ? 1 : 0, count, 0, "HINCRBY", 2, count];
    for (let id = first; id < first + count; id++) {
      const { hash, field } = counter(benchRecord(id));
      keys.push(prefix + hash);
      args.push(field, 1);
    }
    commands.push(resp(["EVALSHA", sha, keys.length, ...keys, ...args]));
  }
  const seconds = await sendTimed(setup, commands);
  report({ records, seconds, checkpointMs: [] });
  await cleanUp();
}

const cases: Record<string, () => Promise<void>> = {
  "upsert sink (SET)": () =>
    framework(
      () =>
        new RedisUpsertSink<BenchRecord>({
          connection: url,
          keyPrefix: prefix,
          ...upsertMapping,
        }),
    ),
  "write-ahead sink (HINCRBY)": () =>
    framework(
      () => new RedisWriteAheadSink<BenchRecord>({ connection: url, keyPrefix: prefix, operations: increment }),
    ),
  "at-least-once sink (HINCRBY)": () =>
    framework(
      () => new RedisAtLeastOnceSink<BenchRecord>({ connection: url, keyPrefix: prefix, operations: increment }),
    ),
  "raw pipelined SET": () => raw((p, r) => p.set(prefix + upsertKey(r), r.payload)),
  "raw pipelined HINCRBY": () =>
    raw((p, r) => {
      const { hash, field } = counter(r);
      p.hincrby(prefix + hash, field, 1);
    }),
  "naive (one awaited SET per record)": naive,
  "guard script alone (server ceiling of the upsert sink)": guardCeiling,
  "apply script alone (server ceiling of the write-ahead sink)": applyCeiling,
};
const run = cases[name];
if (!run) throw new Error(`unknown case ${name}; cases: ${Object.keys(cases).join(", ")}`);
await run();
