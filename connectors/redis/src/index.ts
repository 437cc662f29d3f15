export type { RedisConnection, ScriptCall } from "./connection.ts";
export type { RedisConnectionOptions } from "./ioredis/ioredis-connection.ts";
export { hashTag, versionKeyOf } from "./key-names.ts";
export type { EncodedOperation, RedisOperation } from "./operations.ts";
export { RedisUpsertSink, type RedisUpsertSinkOptions, sourceOffsetVersion } from "./redis-upsert-sink.ts";
export { RedisWriteAheadSink, type RedisWriteAheadSinkOptions } from "./redis-write-ahead-sink.ts";
export type { ValueShape } from "./value-shapes.ts";
