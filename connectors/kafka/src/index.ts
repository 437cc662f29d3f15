export type { KafkaHeaders } from "./kafka-connection.ts";
export { OffsetOutOfRangeError } from "./kafka-errors.ts";
export {
  KafkaAtLeastOnceSink,
  type KafkaAtLeastOnceSinkOptions,
  KafkaNoGuaranteeSink,
  type KafkaNoGuaranteeSinkOptions,
  KafkaPlainSink,
} from "./kafka-plain-sink.ts";
// `KafkaSink` was one class for every guarantee; it is now the type of what `kafkaSink()`
// makes. Construct `KafkaTransactionalSink` (EXACTLY_ONCE), `KafkaAtLeastOnceSink` or
// `KafkaNoGuaranteeSink` directly, or let `kafkaSink({ guarantee })` pick.
export { type KafkaRepartitionOptions, kafkaRepartition } from "./kafka-repartition.ts";
export { type KafkaSink, type KafkaSinkOptions, type KafkaSinkTransaction, kafkaSink } from "./kafka-sink.ts";
export {
  type KafkaRecord,
  KafkaSource,
  type KafkaSourceOptions,
  type KafkaStartPosition,
  valueAsString,
} from "./kafka-source.ts";
export { KafkaTransactionalSink, type KafkaTransactionalSinkOptions } from "./kafka-transactional-sink.ts";
export { type KafkaLingeringOptions, KafkaLingeringTransactions } from "./lingering.ts";
export type { KafkaConnectionOptions, KafkaCredential, KafkaSaslOptions } from "./open-connection.ts";
export {
  type CheckpointTiming,
  type KafkaCompression,
  type KafkaSinkMessage,
  type KafkaWriteOptions,
  minimumTransactionTimeout,
} from "./options.ts";
export { type KafkaTransactionState, parseTransactionalId, transactionalIdOf } from "./transaction-ids.ts";
