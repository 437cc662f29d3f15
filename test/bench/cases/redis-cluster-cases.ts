/**
 * The Redis connector's benchmark cases on a Redis Cluster (EXACTLY_REDIS_CLUSTER_NODES), one
 * per child process:
 *   node test/bench/cases/redis-cluster-cases.ts <case> <records> <dir>
 * The records, keys and commands of the single-server cases (redis-cases.ts): upserts SET
 * 100,000 keys, each many times; increments HINCRBY 100 fields of 1,000 hashes. Each case
 * writes under a fresh key prefix of its own and deletes it afterwards, on every master.
 * The write-ahead sink needs a hash tag in its prefix on a Cluster (a call applies its
 * operations and advances its marker in one script), so its keys all live in one slot, on one
 * master; the other cases' keys spread over every slot. Raw HINCRBY runs both ways. Each
 * exactly-once sink's script also runs alone, its calls as the sink sends them on a Cluster:
 * the most the servers let that sink do there.
 */
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import type { SinkFactory } from "@exactly/core";
import { RedisAtLeastOnceSink, RedisUpsertSink, RedisWriteAheadSink } from "@exactly/redis";
import { Cluster } from "ioredis";
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
import { resp, sendRaw } from "./redis-raw-calls.ts";

/**
 * The slot function ioredis routes by, from the connector's own dependency (the root does not
 * have it): a raw pipeline must hold only keys of one master, as the connector's do.
 */
const calculateSlot = createRequire(new URL("../../../connectors/redis/package.json", import.meta.url))(
  "cluster-key-slot",
) as (key: string) => number;

const [name, recordsArg, dir] = process.argv.slice(2) as [string, string, string];
const records = Number(recordsArg);
const clusterNodes = (process.env.EXACTLY_REDIS_CLUSTER_NODES as string).split(",").map((node) => {
  const [host, port] = node.split(":") as [string, string];
  return { host, port: Number(port) };
});
const caseName = `bench:${name.replace(/[^a-z0-9]+/g, "-")}:${runId(dir)}`;
/** Keys over every slot of the Cluster. */
const spread = `${caseName}:`;
/** Keys in one slot, as the write-ahead sink requires of its prefix. */
const tagged = `{${caseName}}:`;
/** Records per raw batch, as the sinks send per flush. */
const PIPELINE = 1000;

async function withCluster<T>(use: (cluster: Cluster) => Promise<T>): Promise<T> {
  const cluster = new Cluster(clusterNodes, { lazyConnect: true });
  await cluster.connect();
  try {
    return await use(cluster);
  } finally {
    cluster.disconnect();
  }
}

/** Deletes what the case wrote on every master: its prefixes, and the version keys (`{<key>}:exactly-version`). */
async function cleanUp(): Promise<void> {
  await withCluster(async (cluster) => {
    for (const node of cluster.nodes("master")) {
      for (const pattern of [`${spread}*`, `{${spread}*`, `${tagged}*`]) await unlinkMatching(node, pattern);
    }
  });
}

async function framework(sink: SinkFactory<BenchRecord>): Promise<void> {
  await runSinkJob(name, dir, records, sink);
  await cleanUp();
}

/**
 * Raw ioredis on the Cluster, without the runtime: batches of PIPELINE records one after
 * another, each as one pipeline per master sent at once (ioredis refuses a pipeline whose keys
 * are served by different nodes), as the connector sends a flush.
 */
async function raw(
  keyOf: (r: BenchRecord) => string,
  add: (pipeline: Pipeline, r: BenchRecord) => void,
): Promise<void> {
  await withCluster(async (cluster) => {
    const started = performance.now();
    for (let start = 0; start < records; start += PIPELINE) {
      const pipelines = new Map<string, Pipeline>();
      for (let id = start; id < Math.min(records, start + PIPELINE); id++) {
        const r = benchRecord(id);
        const master = cluster.slots[calculateSlot(keyOf(r))]?.[0] ?? "";
        let pipeline = pipelines.get(master);
        if (!pipeline) {
          pipeline = cluster.pipeline();
          pipelines.set(master, pipeline);
        }
        add(pipeline, r);
      }
      await Promise.all([...pipelines.values()].map((p) => p.exec()));
    }
    report({ records, seconds: (performance.now() - started) / 1000, checkpointMs: [] });
  });
  await cleanUp();
}

type Pipeline = ReturnType<Cluster["pipeline"]>;

const rawHincrby = (prefix: string) =>
  raw(
    (r) => prefix + counter(r).hash,
    (p, r) => {
      const { hash, field } = counter(r);
      p.hincrby(prefix + hash, field, 1);
    },
  );

/**
 * A sink's script alone on the Cluster, its ceiling: the calls the sink sends (the same records,
 * keys and calls), encoded before the clock starts and written as RESP, one socket per master,
 * all masters at once; timed from the first send to the last reply.
 */
async function scriptCeiling(
  lua: string,
  calls: readonly ScriptCall[],
  inFlight: (callsToMaster: number) => number,
): Promise<void> {
  const sha = createHash("sha1").update(lua).digest("hex");
  const perMaster = await withCluster(async (cluster) => {
    const byMaster = new Map<string, Buffer[]>();
    for (const { keys, args } of calls) {
      const master = cluster.slots[calculateSlot(keys[0] as string)]?.[0] ?? "";
      let commands = byMaster.get(master);
      if (!commands) {
        commands = [];
        byMaster.set(master, commands);
      }
      commands.push(resp(["EVALSHA", sha, keys.length, ...keys, ...args]));
    }
    return byMaster;
  });
  const spans = await Promise.all(
    [...perMaster].map(([master, commands]) => {
      const [host, port] = master.split(":") as [string, string];
      const setup = [resp(["SCRIPT", "LOAD", lua])];
      return sendRaw({ host, port: Number(port) }, setup, commands, inFlight(commands.length));
    }),
  );
  const seconds = (Math.max(...spans.map((s) => s.ended)) - Math.min(...spans.map((s) => s.started))) / 1000;
  report({ records, seconds, checkpointMs: [] });
  await cleanUp();
}

interface ScriptCall {
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
}

/**
 * The upsert sink's guard script as the sink calls it on a Cluster: a flush's records (1,000)
 * in one call per slot, 8 flushes out at once. The records' keys are consecutive, so a flush's
 * keys fall in as many slots as there are keys: one write per call.
 */
function guardCeiling(): Promise<void> {
  const calls: ScriptCall[] = [];
  for (let start = 0; start < records; start += PIPELINE) {
    const bySlot = new Map<number, { keys: string[]; args: (string | number)[] }>();
    for (let id = start; id < Math.min(records, start + PIPELINE); id++) {
      const r = benchRecord(id);
      const key = spread + upsertKey(r);
      const slot = calculateSlot(key);
      let call = bySlot.get(slot);
      if (!call) {
        call = { keys: [], args: ["string", 0, 0, ""] };
        bySlot.set(slot, call);
      }
      call.keys.push(key, `{${key}}:exactly-version`);
      call.args.push(r.id, 1, r.payload);
    }
    calls.push(...bySlot.values());
  }
  const flushes = Math.ceil(records / PIPELINE);
  return scriptCeiling(SCRIPTS.guardedUpsert, calls, (callsToMaster) => Math.ceil((8 * callsToMaster) / flushes));
}

/** The write-ahead sink's apply script: 1,000 increments a call, all on its prefix's slot, 16 calls out at once. */
function applyCeiling(): Promise<void> {
  const calls: ScriptCall[] = [];
  for (let first = 0; first < records; first += 1000) {
    const count = Math.min(1000, records - first);
    const keys = [`${tagged}exactly-wal:ceiling:0`];
    const args: (string | number)[] = [1, first, first + count >= records ? 1 : 0, count, 0, "HINCRBY", 2, count];
    for (let id = first; id < first + count; id++) {
      const { hash, field } = counter(benchRecord(id));
      keys.push(tagged + hash);
      args.push(field, 1);
    }
    calls.push({ keys, args });
  }
  return scriptCeiling(SCRIPTS.applyChunk, calls, () => 16);
}

const cases: Record<string, () => Promise<void>> = {
  "upsert sink (SET)": () =>
    framework(
      () =>
        new RedisUpsertSink<BenchRecord>({
          connection: { clusterNodes },
          keyPrefix: spread,
          ...upsertMapping,
        }),
    ),
  "write-ahead sink (HINCRBY)": () =>
    framework(
      () =>
        new RedisWriteAheadSink<BenchRecord>({
          connection: { clusterNodes },
          keyPrefix: tagged,
          operations: increment,
        }),
    ),
  "at-least-once sink (HINCRBY)": () =>
    framework(
      () =>
        new RedisAtLeastOnceSink<BenchRecord>({
          connection: { clusterNodes },
          keyPrefix: spread,
          operations: increment,
        }),
    ),
  "raw pipelined SET": () =>
    raw(
      (r) => spread + upsertKey(r),
      (p, r) => p.set(spread + upsertKey(r), r.payload),
    ),
  "raw pipelined HINCRBY": () => rawHincrby(spread),
  "raw pipelined HINCRBY, one slot (the write-ahead sink's keys)": () => rawHincrby(tagged),
  "guard script alone, a call per slot (server ceiling of the upsert sink)": guardCeiling,
  "apply script alone, one slot (server ceiling of the write-ahead sink)": applyCeiling,
};
const run = cases[name];
if (!run) throw new Error(`unknown case ${name}; cases: ${Object.keys(cases).join(", ")}`);
await run();
