/**
 * The Kafka sink's conformance definitions (EXACTLY_ONCE and AT_LEAST_ONCE). The suite's
 * child process loads this module for `createSink`; the test process uses the definitions.
 * Each scenario writes to a topic of its own, named after the scenario's scope.
 */
import type { ConformanceDefinition, ConformanceRecord, ScenarioScope, SinkFactoryContext } from "@exactly/conformance";
import { DeliveryGuarantee } from "@exactly/core";
import { kafkaSink } from "../../src/index.ts";
import { openKafkaConnection } from "../../src/open-connection.ts";
import { CommittedTail, createTopic, newKafka, partitionEnds, readCommitted } from "../helpers.ts";

interface KafkaConformanceOptions {
  readonly brokers: string[];
  readonly guarantee: DeliveryGuarantee;
}

const PARTITIONS = 3;
/** Kafka aborts a transaction left open this long; the transaction-timeout scenario outlasts it. */
const TRANSACTION_TIMEOUT_MS = 10_000;
/** The topic a scenario writes to. */
export const topicOf = (scope: ScenarioScope) => `conformance-${scope.id}`;

export function createSink(context: SinkFactoryContext<KafkaConformanceOptions>) {
  return kafkaSink<ConformanceRecord>({
    brokers: context.options.brokers,
    topic: topicOf(context.scope),
    guarantee: context.options.guarantee,
    transactionalIdPrefix: topicOf(context.scope),
    transactionTimeoutMs: TRANSACTION_TIMEOUT_MS,
    serializer: (r) => ({ key: String(r.id), value: String(r.id) }),
  })();
}

export function kafkaDefinition(
  brokers: string[],
  guarantee: DeliveryGuarantee,
): ConformanceDefinition<KafkaConformanceOptions> {
  const kafka = newKafka(brokers);
  // The observer's reader during runs, one per scenario scope: it keeps its place between polls.
  const tails = new Map<string, CommittedTail>();
  const tailOf = (scope: ScenarioScope) => {
    let tail = tails.get(scope.id);
    if (!tail) {
      tail = new CommittedTail(topicOf(scope), PARTITIONS, brokers);
      tails.set(scope.id, tail);
    }
    return tail;
  };
  return {
    name: `kafka sink (${guarantee})`,
    sinkModule: new URL(import.meta.url),
    sinkOptions: { brokers, guarantee },
    // Stated, so the suite checks that the sink built from these options declares it.
    guarantee,
    // The exactly-once sink extends TwoPhaseCommitSink, which states this; the at-least-once
    // sink implements the hooks directly and only flushes at the barrier.
    lifecycle: guarantee === DeliveryGuarantee.EXACTLY_ONCE ? "two-phase-commit" : "flush",
    transactionTimeoutMs: TRANSACTION_TIMEOUT_MS,
    setup: (scope) => createTopic(kafka, topicOf(scope), PARTITIONS),
    async teardown(scope) {
      await tails.get(scope.id)?.close();
      tails.delete(scope.id);
      const admin = kafka.admin();
      await admin.connect();
      try {
        await admin.deleteTopics({ topics: [topicOf(scope)] });
      } finally {
        await admin.disconnect();
      }
    },
    // What a read_committed consumer sees: up to each partition's last stable offset. While
    // runs go on, a reader that keeps its place; at the end, a fresh one from offset 0.
    readCommitted: async (scope, phase) =>
      phase === "ended"
        ? (await readCommitted(topicOf(scope), PARTITIONS, { settle: true, brokers })).map(Number)
        : (await tailOf(scope).read()).map(Number),
    async probeLingering(scope) {
      const lingering: string[] = [];
      const connection = openKafkaConnection({ brokers });
      try {
        await connection.connect();
        const open = (await connection.listTransactions(["Ongoing", "PrepareCommit", "PrepareAbort"])) ?? [];
        for (const txn of open) {
          if (txn.transactionalId.startsWith(`${topicOf(scope)}-`))
            lingering.push(`${txn.transactionalId} (${txn.state})`);
        }
      } finally {
        await connection.close();
      }
      for (const end of await partitionEnds(topicOf(scope), PARTITIONS, brokers)) {
        if (end.lastStableOffset !== end.highWatermark) {
          lingering.push(
            `partition ${end.partition}: LSO ${end.lastStableOffset} < HWM ${end.highWatermark} blocks read_committed readers`,
          );
        }
      }
      return lingering;
    },
  };
}
