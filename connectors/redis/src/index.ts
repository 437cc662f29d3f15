export {
  connectRedis,
  connectRedisReader,
  type RedisClusterConnection,
  type RedisConnectionOptions,
  type RedisReader,
  type RedisToolConnection,
} from "./ioredis/ioredis-connection.ts";
export { globEscape, hashTag, versionKeyOf } from "./key-names.ts";
export type { EncodedOperation, RedisOperation } from "./operations.ts";
export { RedisAtLeastOnceSink, type RedisAtLeastOnceSinkOptions } from "./redis-at-least-once-sink.ts";
export type { RedisConnection, ScriptCall } from "./redis-connection.ts";
export {
  type RedisOperationsSinkOptions,
  type RedisSink,
  type RedisSinkOptions,
  type RedisUpsertFactoryOptions,
  redisSink,
} from "./redis-sink.ts";
export { RedisUpsertSink, type RedisUpsertSinkOptions, sourceOffsetVersion } from "./redis-upsert-sink.ts";
export { RedisWriteAheadSink, type RedisWriteAheadSinkOptions } from "./redis-write-ahead-sink.ts";
export type { ValueShape } from "./value-shapes.ts";
