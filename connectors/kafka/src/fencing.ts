import { TransientError, withRetry } from "@exactly/core";
import { isRetriableKafkaError } from "./kafka-errors.ts";
import type { InternalCluster } from "./kafkajs/cluster.ts";
import { fenceTransactionalId } from "./kafkajs/transactions.ts";

/**
 * InitProducerId on `transactionalId`, which aborts what is open under it and fences its
 * producer; retried while the broker is still completing an earlier transaction of the id
 * (CONCURRENT_TRANSACTIONS) or moving its coordinator. Returns the new epoch (0: the id was
 * unknown). Used by the sink's recovery and by the lingering-work finder.
 */
export async function fence(
  cluster: InternalCluster,
  transactionalId: string,
  transactionTimeoutMs: number,
): Promise<number> {
  const handle = await withRetry(
    async () => {
      try {
        return await fenceTransactionalId(cluster, transactionalId, transactionTimeoutMs);
      } catch (error) {
        if (isRetriableKafkaError(error))
          throw new TransientError(`InitProducerId for ${transactionalId}`, { cause: error });
        throw error;
      }
    },
    (e) => e instanceof TransientError,
    { maxAttempts: 30, initialDelayMs: 50, maxDelayMs: 2000 },
  );
  return handle.epoch;
}
