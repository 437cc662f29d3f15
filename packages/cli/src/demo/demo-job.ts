import { join } from "node:path";
import {
  type CheckpointingMode,
  type CheckpointStorage,
  ConfigurationError,
  DeliveryGuarantee,
  GeneratorSource,
  type JobClient,
  type JobEvents,
  type JobMetrics,
  type Logger,
  type SinkFactory,
  StreamJob,
} from "@exactly/core";
import { localFileSink } from "@exactly/file";
import { DEMO_SINK_NAME, loadPostgresConnector, type PostgresDemoSink } from "./postgres-target.ts";
import { type RedisDemoTarget, redisDemoSinks } from "./redis-target.ts";
import { type S3DemoTarget, s3DemoSinks } from "./s3-target.ts";

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

/**
 * The demo job: generated records with unique ids → keyed stage numbering each key's
 * records from checkpointed state → the sinks (rolling local files, a Postgres table, or Redis).
 * Checkpoints go to a hidden folder inside the output directory, so the output's visible
 * files are exactly what was committed, or to `storage` when given (S3).
 */
export function startDemoJob(
  config: DemoJobConfig,
  sinks: Record<string, SinkFactory<DemoRecord>>,
  onGenerated: (index: number) => void,
  events: JobEvents,
  logger: Logger,
  storage?: CheckpointStorage,
  metrics?: JobMetrics,
): JobClient {
  const job = new StreamJob({
    name: DEMO_JOB_NAME,
    ...(metrics ? { metrics } : {}),
    parallelism: config.parallelism,
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
          onGenerated(id);
          return { id, key: id % config.keys };
        },
      }),
    )
    .keyBy((r) => r.key)
    .process<DemoRecord, number>({
      processElement(record, ctx) {
        const seq = (ctx.state.value() ?? 0) + 1;
        ctx.state.update(seq);
        ctx.emit({ id: record.id, key: record.key, seq });
      },
    });
  for (const [name, sink] of Object.entries(sinks)) numbered.sinkTo(sink, { name });
  return job.start(events);
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
