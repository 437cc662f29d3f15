/**
 * `postgresSink({...})`: the Postgres sink for `sinkTo`, one class per guarantee, as the
 * Kafka and file connectors have. EXACTLY_ONCE is kept on prepared transactions
 * ({@link PostgresTwoPhaseSink}, the default) or, where the server allows none, by a
 * write-ahead log ({@link PostgresWriteAheadSink}); AT_LEAST_ONCE commits at every barrier
 * ({@link PostgresAtLeastOnceSink}).
 */
import { ConfigurationError, DeliveryGuarantee } from "@exactly/core";
import { PostgresAtLeastOnceSink } from "./postgres-at-least-once-sink.ts";
import { PostgresTwoPhaseSink, type PostgresTwoPhaseSinkOptions } from "./postgres-two-phase-sink.ts";
import { PostgresWriteAheadSink } from "./postgres-write-ahead-sink.ts";

export interface PostgresSinkFactoryOptions<T> extends PostgresTwoPhaseSinkOptions<T> {
  /** Default EXACTLY_ONCE. */
  readonly guarantee?: DeliveryGuarantee;
  /**
   * How EXACTLY_ONCE is kept: "two-phase" (PREPARE TRANSACTION; needs
   * `max_prepared_transactions` > 0) or "write-ahead" (no server setting). Default "two-phase".
   */
  readonly exactlyOnce?: "two-phase" | "write-ahead";
}

export type PostgresSink<T> = PostgresTwoPhaseSink<T> | PostgresWriteAheadSink<T> | PostgresAtLeastOnceSink<T>;

function sinkOf<T>(options: PostgresSinkFactoryOptions<T>): () => PostgresSink<T> {
  const guarantee = options.guarantee ?? DeliveryGuarantee.EXACTLY_ONCE;
  if (guarantee === DeliveryGuarantee.AT_LEAST_ONCE) return () => new PostgresAtLeastOnceSink(options);
  if (guarantee !== DeliveryGuarantee.EXACTLY_ONCE) {
    throw new ConfigurationError(
      "guarantee",
      `must be ${DeliveryGuarantee.EXACTLY_ONCE} or ${DeliveryGuarantee.AT_LEAST_ONCE}`,
    );
  }
  switch (options.exactlyOnce ?? "two-phase") {
    case "two-phase":
      return () => new PostgresTwoPhaseSink(options);
    case "write-ahead":
      return () => new PostgresWriteAheadSink(options);
    default:
      throw new ConfigurationError(
        "exactlyOnce",
        `must be "two-phase" or "write-ahead", got ${JSON.stringify(options.exactlyOnce)}`,
      );
  }
}

/** A Postgres sink factory for `sinkTo`: one sink per subtask, of the class the options pick. */
export function postgresSink<T>(options: PostgresSinkFactoryOptions<T>): () => PostgresSink<T> {
  const create = sinkOf(options);
  // Validate once, at job definition, rather than in every subtask.
  create();
  return create;
}
