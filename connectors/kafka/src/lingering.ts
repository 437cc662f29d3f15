import { ConfigurationError, type LingeringWork, type LingeringWorkFinder, type StateReferences } from "@exactly/core";
import { transactionsInState } from "@exactly/core/internal";
import { fence } from "./fencing.ts";
import type { KafkaConnection } from "./kafka-connection.ts";
import { type KafkaConnectionOptions, openKafkaConnection } from "./open-connection.ts";
import { parseTransactionalId } from "./transaction-ids.ts";

export interface KafkaLingeringOptions extends KafkaConnectionOptions {
  /** The sink's `transactionalIdPrefix`. */
  readonly transactionalIdPrefix: string;
}

/**
 * The open Kafka transactions of one transactional sink, found from outside the job: every
 * `Ongoing` transaction whose id is `<prefix>-<subtask>-<slot>`, with its start time and the
 * partitions whose readers it holds back. A checkpoint references a transaction by id,
 * producer id and epoch, since the sink reuses ids across checkpoints (transaction-ids.ts):
 * an old checkpoint's reference to `out-0-1` says nothing about the transaction open under
 * `out-0-1` now. Aborting is InitProducerId on the id, as the sink's own recovery does.
 */
export class KafkaLingeringTransactions implements LingeringWorkFinder {
  readonly description: string;
  private readonly prefix: string;
  private readonly options: KafkaConnectionOptions;
  private connection: KafkaConnection | undefined;

  constructor(options: KafkaLingeringOptions) {
    const prefix = options.transactionalIdPrefix;
    if (!prefix)
      throw new ConfigurationError("transactionalIdPrefix", "is required: the sink's transactional-id prefix");
    this.prefix = prefix;
    this.options = options;
    this.description = `Kafka transactions with transactional-id prefix ${prefix}`;
  }

  private async connected(): Promise<KafkaConnection> {
    if (!this.connection) {
      // Kept before it connects: a connect that fails half way may hold a socket for close().
      const connection = openKafkaConnection(this.options);
      this.connection = connection;
      await connection.connect();
    }
    return this.connection;
  }

  async list(): Promise<LingeringWork[]> {
    const kafka = await this.connected();
    const listed = await kafka.listTransactions(["Ongoing"]);
    if (!listed) {
      throw new Error("the brokers cannot list transactions (ListTransactions needs Kafka 3.0 or later)");
    }
    const found: LingeringWork[] = [];
    for (const txn of listed) {
      if (!parseTransactionalId(this.prefix, txn.transactionalId)) continue;
      const described = await kafka.describeTransaction(txn.transactionalId);
      // It may have ended between the listing and the description.
      if (described.state !== "Ongoing") continue;
      const partitions = described.partitions.map((p) => `${p.topic}:${p.partition}`).sort();
      found.push({
        id: txn.transactionalId,
        reference: referenceOf(txn.transactionalId, described.producerId, described.epoch),
        startedAt: described.startTimeMs >= 0 ? described.startTimeMs : undefined,
        detail:
          `producer ${described.producerId} epoch ${described.epoch}, timeout ${described.timeoutMs / 1000} s, ` +
          `holds back ${partitions.length ? partitions.join(", ") : "no partition yet"}`,
      });
    }
    return found.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  referencesIn(sinkState: unknown): StateReferences {
    const { pending, open } = transactionsInState(sinkState);
    const references = (txns: unknown[]) =>
      txns.flatMap((t) => {
        const txn = t as { transactionalId?: unknown; producerId?: unknown; epoch?: unknown };
        if (typeof txn.transactionalId !== "string" || !parseTransactionalId(this.prefix, txn.transactionalId))
          return [];
        return [referenceOf(txn.transactionalId, String(txn.producerId), Number(txn.epoch))];
      });
    return { pending: references(pending), open: references(open) };
  }

  async abort(work: LingeringWork): Promise<void> {
    const kafka = await this.connected();
    // Only the transaction that was listed: one that ended since, or a newer one under the
    // same id, is left alone. The id keeps the transaction timeout the coordinator has for it.
    const described = await kafka.describeTransaction(work.id);
    if (described.state !== "Ongoing") return;
    if (referenceOf(work.id, described.producerId, described.epoch) !== work.reference) return;
    await fence(kafka, work.id, described.timeoutMs);
  }

  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    await connection?.close();
  }
}

function referenceOf(transactionalId: string, producerId: string, epoch: number): string {
  return `${transactionalId} producer ${producerId} epoch ${epoch}`;
}
