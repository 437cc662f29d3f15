export type { RedisConnection, ScriptCall } from "./connection.ts";
export {
  connectRedis,
  type RedisClusterConnection,
  type RedisConnectionOptions,
} from "./ioredis/ioredis-connection.ts";
export { globEscape, hashTag, versionKeyOf } from "./key-names.ts";
export type { EncodedOperation, RedisOperation } from "./operations.ts";
export { RedisAtLeastOnceSink, type RedisAtLeastOnceSinkOptions } from "./redis-at-least-once-sink.ts";
export { RedisUpsertSink, type RedisUpsertSinkOptions, sourceOffsetVersion } from "./redis-upsert-sink.ts";
export { RedisWriteAheadSink, type RedisWriteAheadSinkOptions } from "./redis-write-ahead-sink.ts";
export type { ValueShape } from "./value-shapes.ts";
