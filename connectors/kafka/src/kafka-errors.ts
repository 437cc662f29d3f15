/**
 * What a Kafka error means for the connector. The port rejects with errors whose `type` names
 * the protocol error code and whose `retriable` is Kafka's own verdict, or with a
 * `TransientError` for a lost connection or a timeout (platformatic/errors.ts); the sinks
 * decide from these whether to retry, and when a commit's answer means the transaction is lost.
 */
import { ExactlyError, isTransientByDefault, TransientError } from "@exactly/core";

/** Errors the transaction coordinator answers when the stored epoch no longer holds the transaction. */
export const FENCED = new Set(["INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"]);

/** Coordinator answers that pass: it is busy completing a transaction, loading, or moving. */
export const RETRIABLE_COORDINATOR = new Set([
  "CONCURRENT_TRANSACTIONS",
  "COORDINATOR_LOAD_IN_PROGRESS",
  "COORDINATOR_NOT_AVAILABLE",
  "NOT_COORDINATOR",
  "REQUEST_TIMED_OUT",
]);

/** The protocol error a port error carries (INVALID_PRODUCER_EPOCH, …), if any. */
export function errorType(error: unknown): string | undefined {
  const type = (error as { type?: unknown } | undefined)?.type;
  return typeof type === "string" ? type : undefined;
}

/** Whether a retry of the same request may succeed: a busy or moving coordinator, a lost connection. */
export function isRetriableKafkaError(error: unknown): boolean {
  if (error instanceof TransientError || isTransientByDefault(error)) return true;
  const type = errorType(error);
  return type !== undefined && RETRIABLE_COORDINATOR.has(type);
}

/**
 * Whether a failed attempt may get past this error on a restart: what a retry may get past,
 * and every broker refusal that Kafka counts as retriable (a leader moving, a broker that is
 * not available yet). The restart strategy asks this, never the commit path, which decides
 * on the narrower {@link isRetriableKafkaError}.
 */
export function isTransientKafkaFailure(error: unknown): boolean {
  if (isRetriableKafkaError(error)) return true;
  const { type, retriable } = (error ?? {}) as { type?: unknown; retriable?: unknown };
  return typeof type === "string" && retriable === true;
}

/**
 * The broker no longer has the records at a checkpointed offset (retention deleted them, or
 * the topic was recreated). Resuming elsewhere would skip or repeat records silently, so the
 * source fails instead, naming the splits.
 */
export class OffsetOutOfRangeError extends ExactlyError {
  /** The splits (`topic:partition`) of the failed fetch. */
  readonly splits: readonly string[];
  /** A restart reads the same checkpointed offset again: the records are not coming back. */
  override readonly permanent = true;
  constructor(source: string, splits: readonly string[], options?: ErrorOptions) {
    super(
      "OFFSET_OUT_OF_RANGE",
      `Kafka source ${source}: a checkpointed offset is out of range (deleted by retention?) on ${splits.join(", ")}`,
      options,
    );
    this.splits = splits;
  }
}
