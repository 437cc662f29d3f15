import { TransientError } from "@exactly/core";
import { withRetry } from "@exactly/core/internal";
import type { KafkaConnection, TransactionHandle } from "./kafka-connection.ts";
import { isRetriableKafkaError } from "./kafka-errors.ts";

/**
 * InitProducerId on `transactionalId`, which aborts what is open under it and fences its
 * producer; retried while the broker is still completing an earlier transaction of the id
 * (CONCURRENT_TRANSACTIONS) or moving its coordinator. Returns the new epoch (0: the id was
 * unknown). Used by the sink's recovery and by the lingering-work finder.
 */
export async function fence(
  connection: KafkaConnection,
  transactionalId: string,
  transactionTimeoutMs: number,
): Promise<number> {
  return (await initProducerIdRetried(connection, transactionalId, transactionTimeoutMs)).epoch;
}

/** {@link KafkaConnection.initProducerId}, retried as {@link fence} retries it; the handle it ends with. */
export function initProducerIdRetried(
  connection: Pick<KafkaConnection, "initProducerId">,
  transactionalId: string,
  transactionTimeoutMs: number,
): Promise<TransactionHandle> {
  return withRetry(
    async () => {
      try {
        return await connection.initProducerId(transactionalId, transactionTimeoutMs);
      } catch (error) {
        if (isRetriableKafkaError(error))
          throw new TransientError(`InitProducerId for ${transactionalId}`, { cause: error });
        throw error;
      }
    },
    (e) => e instanceof TransientError,
    { maxAttempts: 30, initialDelayMs: 50, maxDelayMs: 2000 },
  );
}
