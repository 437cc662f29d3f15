import { join } from "node:path";
import {
  type ExchangeCodec,
  GeneratorSource,
  type JobMetrics,
  type JobRuntime,
  type Logger,
  loadJob,
  StreamJob,
  smallInteger,
  splitPerKey,
} from "@exactly/core";
import { CHECKPOINT_DIR, DEMO_JOB_NAME, DEMO_MAX_PARALLELISM, type DemoJobConfig } from "./demo-job-config.ts";
import type { DemoRecord } from "./demo-record.ts";
import { DEMO_TARGETS } from "./targets/demo-targets.ts";

/** What the demo job module is given as `params`. */
export interface DemoJobParams {
  readonly config: DemoJobConfig;
  /**
   * Raised to the number of records generated so far (in steps of {@link PROGRESS_STEP}) by
   * every thread that runs a generator subtask: one Int32 shared by all of them.
   */
  readonly generated?: SharedArrayBuffer;
}

/**
 * How generated records cross to the keyed stage on another worker thread: their two numbers
 * in one Float64Array, not JSON text (a keyed stage with many records of one fixed shape
 * declares a codec: docs/design.md §2, Worker threads).
 */
const generatedCodec: ExchangeCodec<{ id: number; key: number }> = {
  name: "demo-generated",
  encode(values) {
    const numbers = new Float64Array(values.length * 2);
    for (let i = 0; i < values.length; i++) {
      const value = values[i] as { id: number; key: number };
      numbers[2 * i] = value.id;
      numbers[2 * i + 1] = value.key;
    }
    return new Uint8Array(numbers.buffer);
  },
  // Whole numbers go back as small integers, not doubles: see smallInteger.
  decode(bytes) {
    const numbers = new Float64Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 8);
    const values = new Array<{ id: number; key: number }>(numbers.length / 2);
    for (let i = 0; i < values.length; i++)
      values[i] = { id: smallInteger(numbers[2 * i] as number), key: smallInteger(numbers[2 * i + 1] as number) };
    return values;
  },
};

/** Records between two raises of the shared progress counter. */
const PROGRESS_STEP = 256;

// This module, as a worker thread imports it again: .ts from the sources, .js when built.
const DEMO_JOB_MODULE = new URL(import.meta.url.endsWith(".ts") ? "./demo-job.ts" : "./demo-job.js", import.meta.url);

/** The demo job loaded from this module, so that it can run on worker threads. */
export function loadDemoJob(
  config: DemoJobConfig,
  runtime: { logger: Logger; metrics?: JobMetrics; generated?: SharedArrayBuffer },
): Promise<StreamJob> {
  const params: DemoJobParams = { config, ...(runtime.generated ? { generated: runtime.generated } : {}) };
  return loadJob(DEMO_JOB_MODULE, {
    params: params as unknown as Record<string, unknown>,
    runtime: { logger: runtime.logger, ...(runtime.metrics ? { metrics: runtime.metrics } : {}) },
    ...(config.shard ? { shard: config.shard } : {}),
    ...(config.leaseMs === undefined ? {} : { lease: { durationMs: config.leaseMs } }),
  });
}

/**
 * The demo job: generated records with unique ids → keyed stage numbering each key's
 * records from checkpointed state → the target's sinks (rolling local files, a Postgres
 * table, Redis or S3). Checkpoints go to a hidden folder inside the output directory, so the
 * output's visible files are exactly what was committed, or where the target keeps them.
 * Every worker thread builds it again from the same params.
 */
export default async function demoJob({ params, logger, metrics }: JobRuntime): Promise<StreamJob> {
  const { config, generated } = params as unknown as DemoJobParams;
  const progress = generated ? new Int32Array(generated) : undefined;
  const target = DEMO_TARGETS[config.target?.sink ?? "file"];
  const settings = config.target?.settings ?? {};
  const run = { records: config.records, keys: config.keys, guarantee: config.guarantee, out: config.out };
  const storage = await target.checkpoints?.(settings);
  const job = new StreamJob({
    name: DEMO_JOB_NAME,
    metrics,
    parallelism: config.parallelism,
    maxParallelism: DEMO_MAX_PARALLELISM,
    ...(config.workers === undefined ? {} : { workers: config.workers }),
    ...(config.checkpointing ? { checkpointing: config.checkpointing } : {}),
    // The default restart strategy: outages of the sink's server are ridden through.
    checkpoint: { storage: storage ?? join(config.out, CHECKPOINT_DIR), intervalMs: config.checkpointIntervalMs },
    logger,
  });
  const numbered = job
    .fromSource(
      new GeneratorSource({
        name: "demo-generator",
        count: config.records,
        // As shards, a lane per key, read by the subtask that owns the key: shards exchange
        // no records, so each must read only the keys of its key groups (design §2, Shards).
        ...(config.shard
          ? { splits: config.keys, splitOwner: splitPerKey(job.maxParallelism) }
          : { splits: Math.max(4, config.parallelism) }),
        ...(config.ratePerSecond ? { ratePerSecond: config.ratePerSecond } : {}),
        generate: (id) => {
          // A race between two threads may keep the lower of two values for a step: it is progress, not data.
          if (progress && id % PROGRESS_STEP === 0 && id + 1 > Atomics.load(progress, 0))
            Atomics.store(progress, 0, id + 1);
          return { id, key: id % config.keys };
        },
      }),
    )
    .keyBy((r) => r.key)
    .process<DemoRecord, number>(
      {
        processElement(record, ctx) {
          const seq = (ctx.state.value() ?? 0) + 1;
          ctx.state.update(seq);
          ctx.emit({ id: record.id, key: record.key, seq });
        },
      },
      { codec: generatedCodec },
    );
  for (const [name, sink] of Object.entries(await target.sinks(settings, run))) numbered.sinkTo(sink, { name });
  return job;
}
