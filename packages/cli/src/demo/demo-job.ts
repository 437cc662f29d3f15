import { join } from "node:path";
import {
  type CheckpointingMode,
  ConfigurationError,
  DeliveryGuarantee,
  type ExchangeCodec,
  GeneratorSource,
  type JobMetrics,
  type JobRuntime,
  type Logger,
  loadJob,
  type SinkFactory,
  StreamJob,
  smallInteger,
} from "@exactly/core";
import { localFileSink } from "@exactly/file";
import { DEMO_SINK_NAME, loadPostgresConnector, type PostgresDemoSink } from "./postgres-target.ts";
import { type RedisDemoTarget, redisDemoSinks } from "./redis-target.ts";
import { type S3DemoTarget, s3DemoCheckpoints, s3DemoSinks } from "./s3-target.ts";

/** What one demo record looks like in the committed output. */
export interface DemoRecord {
  readonly id: number;
  readonly key: number;
  /** The record's number within its key, from checkpointed keyed state: 1, 2, 3, … per key. */
  readonly seq: number;
}

export interface DemoJobConfig {
  readonly records: number;
  readonly out: string;
  readonly parallelism: number;
  readonly guarantee: DeliveryGuarantee;
  /** Barrier alignment; default "exactly-once". */
  readonly checkpointing?: CheckpointingMode;
  readonly checkpointIntervalMs: number;
  readonly keys: number;
  /** Records per second over the whole job; undefined for as fast as possible. */
  readonly ratePerSecond: number | undefined;
  /** Write to this Postgres table instead of files in `out` (which then holds only checkpoints). */
  readonly postgres?: PostgresDemoSink;
  /** Write counts and latest values to this Redis instead (see redis-target.ts). */
  readonly redis?: RedisDemoTarget;
  /** Write part files to this S3 prefix instead, and perhaps keep the checkpoints on S3 (see s3-target.ts). */
  readonly s3?: S3DemoTarget;
  /** The worker serves the job's metrics on this port (see metrics/prometheus-metrics.ts). */
  readonly metricsPort?: number;
  /** Worker threads (StreamJobOptions.workers); undefined for the machine's cores. */
  readonly workers?: number;
}

/**
 * The demo's sinks, by their names in the job: rolling files in `out`, appends to a Postgres
 * table, or two Redis sinks (connectors loaded on demand).
 */
export async function demoSinks(config: DemoJobConfig): Promise<Record<string, SinkFactory<DemoRecord>>> {
  if (config.redis) return redisDemoSinks(config.redis, config.guarantee);
  if (config.s3) return s3DemoSinks(config.s3, config.guarantee);
  const target = config.postgres;
  if (!target) {
    return {
      "demo-files": () =>
        localFileSink<DemoRecord>({
          directory: config.out,
          partSuffix: ".jsonl",
          guarantee: config.guarantee,
          encoder: (r) => `{"id":${r.id},"key":${r.key},"seq":${r.seq}}`,
        }),
    };
  }
  const { postgresSink } = await loadPostgresConnector();
  return {
    "demo-postgres": postgresSink<DemoRecord>({
      connection: target.url,
      guarantee: config.guarantee,
      exactlyOnce: target.exactlyOnce,
      name: DEMO_SINK_NAME,
      table: {
        table: target.table,
        columns: [
          { name: "id", type: "bigint" },
          { name: "key", type: "integer" },
          { name: "seq", type: "integer" },
        ],
        write: "append",
      },
      // At least once, rows go out in small committed write-outs, as a plain JDBC sink's batches
      // do: a kill then replays rows already committed, and the demo shows the duplicates.
      ...(config.guarantee === DeliveryGuarantee.AT_LEAST_ONCE ? { flushRows: 1000 } : {}),
    }),
  };
}

export const CHECKPOINT_DIR = ".checkpoints";
export const DEMO_JOB_NAME = "exactly-demo";

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
  });
}

/**
 * The demo job: generated records with unique ids → keyed stage numbering each key's
 * records from checkpointed state → the sinks (rolling local files, a Postgres table, Redis
 * or S3). Checkpoints go to a hidden folder inside the output directory, so the output's
 * visible files are exactly what was committed, or to S3 when the target says so. Every
 * worker thread builds it again from the same params.
 */
export default async function demoJob({ params, logger, metrics }: JobRuntime): Promise<StreamJob> {
  const { config, generated } = params as unknown as DemoJobParams;
  const progress = generated ? new Int32Array(generated) : undefined;
  const storage = config.s3 ? await s3DemoCheckpoints(config.s3) : undefined;
  const job = new StreamJob({
    name: DEMO_JOB_NAME,
    metrics,
    parallelism: config.parallelism,
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
        splits: Math.max(4, config.parallelism),
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
  for (const [name, sink] of Object.entries(await demoSinks(config))) numbered.sinkTo(sink, { name });
  return job;
}

export function parseCheckpointing(value: string): CheckpointingMode {
  if (value === "exactly-once" || value === "at-least-once") return value;
  throw new ConfigurationError("--checkpointing", `must be exactly-once or at-least-once, got ${value}`);
}

export function parseGuarantee(value: string): DeliveryGuarantee {
  if (value === "exactly-once") return DeliveryGuarantee.EXACTLY_ONCE;
  if (value === "at-least-once") return DeliveryGuarantee.AT_LEAST_ONCE;
  throw new Error(`--guarantee must be exactly-once or at-least-once, got ${value}`);
}
