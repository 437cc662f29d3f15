/**
 * Connections to the cluster made through kafkajs's private cluster factory, so the sink's
 * producers and the source's fetches share one set of broker connections with the client's
 * own brokers, SSL, SASL and retry settings.
 */
import type { Kafka } from "kafkajs";
import { expectFunctions, internals, KafkajsInternalsError } from "./load.ts";
import type { InternalBroker, InternalCluster } from "./shapes.ts";

export type { InternalBroker, InternalCluster } from "./shapes.ts";

const CLUSTER_METHODS = [
  "connect",
  "disconnect",
  "refreshMetadata",
  "refreshMetadataIfNecessary",
  "addMultipleTargetTopics",
  "getNodeIds",
  "findBroker",
  "findGroupCoordinator",
  "findTopicPartitionMetadata",
  "findLeaderForPartitions",
  "fetchTopicsOffset",
] as const;

/** How long fetched metadata is used before it is asked for again: kafkajs's (and Kafka's Java clients') default. */
const METADATA_MAX_AGE_MS = 300_000;

const BROKER_METHODS = ["initProducerId", "endTxn", "fetch"] as const;

/** Checks the broker has the requests this folder sends; returns it. */
export function checkBroker(broker: InternalBroker): InternalBroker {
  expectFunctions("Broker", broker, BROKER_METHODS);
  expectFunctions("Broker.connectionPool", broker.connectionPool, ["send"]);
  return broker;
}

/**
 * A connection to the cluster, made from a kafkajs `Kafka` client through its private
 * cluster factory (the one `kafka.producer()` uses), so brokers, SSL, SASL and retry
 * settings are the client's own. The caller connects and disconnects it. Topics are never
 * created on the fly: a topic that does not exist is the user's mistake, not a default.
 */
export function createCluster(kafka: Kafka, options: { readCommitted?: boolean } = {}): InternalCluster {
  const symbol = Object.getOwnPropertySymbols(kafka).find((s) => s.description === "private:Kafka:createCluster");
  const factory = symbol === undefined ? undefined : (kafka as unknown as Record<symbol, unknown>)[symbol];
  if (typeof factory !== "function") {
    throw new KafkajsInternalsError("the Kafka client has no private cluster factory (private:Kafka:createCluster)");
  }
  const cluster = (factory as (o: object) => InternalCluster)({
    allowAutoTopicCreation: false,
    // kafkajs's producers and consumers pass 5 minutes; the factory's own default, 0, has the
    // sinks ask for metadata again before nearly every send. A leader that moved is learnt
    // from the errors, on which kafkajs and the source refresh at once.
    metadataMaxAge: METADATA_MAX_AGE_MS,
    ...(options.readCommitted ? { isolationLevel: internals.READ_COMMITTED } : {}),
  });
  expectFunctions("Cluster", cluster, CLUSTER_METHODS);
  return cluster;
}
