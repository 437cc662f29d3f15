export {
  type CheckpointTiming,
  type KafkaClient,
  type KafkaConnectionOptions,
  minimumTransactionTimeout,
} from "./kafka-config.ts";
export { OffsetOutOfRangeError } from "./kafka-errors.ts";
export {
  KafkaSink,
  type KafkaSinkMessage,
  type KafkaSinkOptions,
  type KafkaSinkTransaction,
  kafkaSink,
} from "./kafka-sink.ts";
export {
  type KafkaRecord,
  KafkaSource,
  type KafkaSourceOptions,
  type KafkaStartPosition,
  valueAsString,
} from "./kafka-source.ts";
export { KafkajsInternalsError, PINNED_KAFKAJS_VERSION } from "./kafkajs/load.ts";
export { type KafkaTransactionState, parseTransactionalId, transactionalIdOf } from "./transaction-ids.ts";
