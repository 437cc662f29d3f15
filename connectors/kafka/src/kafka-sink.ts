/**
 * `kafkaSink({...})`: the Kafka sink for `sinkTo`, one class per guarantee, as Flink's Kafka
 * connector splits its writers. EXACTLY_ONCE is a two-phase-commit sink on Kafka transactions
 * ({@link KafkaTransactionalSink}); AT_LEAST_ONCE and NONE flush at the barrier and commit
 * nothing ({@link KafkaAtLeastOnceSink}, {@link KafkaNoGuaranteeSink}).
 */
import { ConfigurationError, DeliveryGuarantee } from "@exactly/core";
import { KafkaAtLeastOnceSink, KafkaNoGuaranteeSink } from "./kafka-plain-sink.ts";
import { KafkaTransactionalSink, type KafkaTransactionalSinkOptions } from "./kafka-transactional-sink.ts";
import type { KafkaTransactionState } from "./transaction-ids.ts";

export interface KafkaSinkOptions<T> extends Omit<KafkaTransactionalSinkOptions<T>, "guarantee"> {
  /**
   * Default EXACTLY_ONCE. The transaction settings (`transactionalIdPrefix`,
   * `transactionTimeoutMs`, `checkpointTiming`, `minTransactionTimeoutMs`, `commitRetry`) are
   * required or used only at EXACTLY_ONCE.
   */
  readonly guarantee?: DeliveryGuarantee;
}

/** The sink {@link kafkaSink} makes: the class of the guarantee asked for. */
export type KafkaSink<T> = KafkaTransactionalSink<T> | KafkaAtLeastOnceSink<T> | KafkaNoGuaranteeSink<T>;

/**
 * A transaction of the exactly-once sink, as checkpointed.
 * @deprecated Use {@link KafkaTransactionState}: the sinks without transactions checkpoint none.
 */
export type KafkaSinkTransaction = KafkaTransactionState;

/** The constructor of the sink for `options.guarantee`; refuses a guarantee that is none of them. */
function sinkOf<T>(options: KafkaSinkOptions<T>): () => KafkaSink<T> {
  const guarantee = options.guarantee ?? DeliveryGuarantee.EXACTLY_ONCE;
  switch (guarantee) {
    case DeliveryGuarantee.EXACTLY_ONCE:
      return () => new KafkaTransactionalSink({ ...options, guarantee });
    case DeliveryGuarantee.AT_LEAST_ONCE:
      return () => new KafkaAtLeastOnceSink({ ...options, guarantee });
    case DeliveryGuarantee.NONE:
      return () => new KafkaNoGuaranteeSink({ ...options, guarantee });
    default:
      throw new ConfigurationError("guarantee", `must be one of ${Object.values(DeliveryGuarantee).join(", ")}`);
  }
}

/** A Kafka sink factory for `sinkTo`: one sink per subtask, of the class `guarantee` picks. */
export function kafkaSink<T>(options: KafkaSinkOptions<T>): () => KafkaSink<T> {
  const create = sinkOf(options);
  // Validate once, at job definition, rather than in every subtask.
  create();
  return create;
}
