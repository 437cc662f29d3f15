/**
 * `redisSink({...})`: the Redis sink for `sinkTo`, one class per guarantee, as the Kafka,
 * Postgres and file connectors have. Records that are operations (`operations`: INCRBY, list
 * pushes, SET, …) are kept EXACTLY_ONCE by a write-ahead log ({@link RedisWriteAheadSink},
 * the default) or written AT_LEAST_ONCE as they come ({@link RedisAtLeastOnceSink}); keyed
 * values with a version (`key`, `value`, `version`) are upserts, EXACTLY_ONCE in effect
 * ({@link RedisUpsertSink}).
 */
import { ConfigurationError, DeliveryGuarantee } from "@exactly/core";
import { RedisAtLeastOnceSink, type RedisAtLeastOnceSinkOptions } from "./redis-at-least-once-sink.ts";
import { RedisUpsertSink, type RedisUpsertSinkOptions } from "./redis-upsert-sink.ts";
import { RedisWriteAheadSink, type RedisWriteAheadSinkOptions } from "./redis-write-ahead-sink.ts";

/** Options of a sink of operations: the write-ahead sink's, and the at-least-once sink's batching. */
export interface RedisOperationsSinkOptions<T>
  extends RedisWriteAheadSinkOptions<T>,
    Pick<RedisAtLeastOnceSinkOptions<T>, "operationsPerFlush"> {
  /** Default EXACTLY_ONCE. `name` and `operationsPerCall` apply to EXACTLY_ONCE, `operationsPerFlush` to AT_LEAST_ONCE. */
  readonly guarantee?: typeof DeliveryGuarantee.EXACTLY_ONCE | typeof DeliveryGuarantee.AT_LEAST_ONCE;
}

/** Options of the upsert sink: versioned keyed values; EXACTLY_ONCE only. */
export interface RedisUpsertFactoryOptions<T> extends RedisUpsertSinkOptions<T> {
  readonly guarantee?: typeof DeliveryGuarantee.EXACTLY_ONCE;
}

/** What {@link redisSink} takes: `operations` for a sink of operations, or `key`, `value` and `version` for upserts. */
export type RedisSinkOptions<T> = RedisOperationsSinkOptions<T> | RedisUpsertFactoryOptions<T>;

/** The sink {@link redisSink} makes: the class of the guarantee and record shape asked for. */
export type RedisSink<T> = RedisWriteAheadSink<T> | RedisAtLeastOnceSink<T> | RedisUpsertSink<T>;

function isOperations<T>(options: RedisSinkOptions<T>): options is RedisOperationsSinkOptions<T> {
  return "operations" in options;
}

/** The constructor of the sink the options ask for; refuses a guarantee it has no class for. */
function sinkOf<T>(options: RedisSinkOptions<T>): () => RedisSink<T> {
  const guarantee = options.guarantee ?? DeliveryGuarantee.EXACTLY_ONCE;
  if (isOperations(options)) {
    if (guarantee === DeliveryGuarantee.EXACTLY_ONCE) return () => new RedisWriteAheadSink(options);
    if (guarantee === DeliveryGuarantee.AT_LEAST_ONCE) return () => new RedisAtLeastOnceSink(options);
  } else if (guarantee === DeliveryGuarantee.EXACTLY_ONCE) {
    return () => new RedisUpsertSink(options);
  }
  throw new ConfigurationError(
    "guarantee",
    isOperations(options)
      ? `must be ${DeliveryGuarantee.EXACTLY_ONCE} or ${DeliveryGuarantee.AT_LEAST_ONCE}`
      : `must be ${DeliveryGuarantee.EXACTLY_ONCE}: upserts with a version are exactly-once in effect; write operations for ${DeliveryGuarantee.AT_LEAST_ONCE}`,
  );
}

/** A Redis sink factory for `sinkTo`: one sink per subtask, of the class the options pick. */
export function redisSink<T>(options: RedisSinkOptions<T>): () => RedisSink<T> {
  const create = sinkOf(options);
  // Validate once, at job definition, rather than in every subtask.
  create();
  return create;
}
