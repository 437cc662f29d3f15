import { ConfigurationError, requirePositiveInteger } from "@exactly/core";
import kafkajs, { type Kafka } from "kafkajs";

/**
 * The part of a kafkajs `Kafka` client the connector calls. Pass your own client to share its
 * SSL, SASL, logging and retry settings; it must be a kafkajs 2.2.4 `Kafka` instance, since
 * the transactional paths build on its internal cluster factory (see kafkajs/cluster.ts).
 */
export type KafkaClient = Pick<Kafka, "producer" | "admin" | "logger">;

export interface KafkaConnectionOptions {
  /** Bootstrap servers; used when no `client` is given. */
  readonly brokers?: readonly string[];
  /** A kafkajs client to use instead of one made from `brokers`. It is never closed by the connector. */
  readonly client?: KafkaClient;
  /** kafkajs clientId of a client made from `brokers`. Default "exactly". */
  readonly clientId?: string;
}

/** The client to use: the injected one, or one made from `brokers` (kafkajs's own logging off: errors still reject). */
export function resolveClient(options: KafkaConnectionOptions): Kafka {
  if (options.client) return options.client as Kafka;
  if (!options.brokers || options.brokers.length === 0) {
    throw new ConfigurationError("brokers", "give the bootstrap servers, or a kafkajs client as `client`");
  }
  return new kafkajs.Kafka({
    clientId: options.clientId ?? "exactly",
    brokers: [...options.brokers],
    // kafkajs logs retriable errors (CONCURRENT_TRANSACTIONS while a fenced transaction
    // aborts) at ERROR before retrying them; real failures reach the sink as rejections.
    logLevel: kafkajs.logLevel.NOTHING,
  });
}

/**
 * How long recovery can take, from the moment a transaction is pre-committed until the next
 * run commits it: the Kafka transaction timeout must exceed this, or the broker aborts a
 * pre-committed transaction before anyone can commit it (silent data loss without checks).
 * Pass the job's own values (StreamJob `checkpoint.intervalMs`, `checkpoint.timeoutMs` and the
 * restart strategy's `maxDelayMs`).
 */
export interface CheckpointTiming {
  readonly intervalMs: number;
  readonly timeoutMs: number;
  /** The longest delay before a restart (RestartStrategy.maxDelayMs; 10 s by default). */
  readonly restartDelayMs: number;
}

/** The lower bound the transaction timeout must meet, from `minTransactionTimeoutMs` and `checkpointTiming`. */
export function minimumTransactionTimeout(options: {
  readonly minTransactionTimeoutMs?: number;
  readonly checkpointTiming?: CheckpointTiming;
}): { ms: number; why: string } | undefined {
  const candidates: Array<{ ms: number; why: string }> = [];
  if (options.minTransactionTimeoutMs !== undefined) {
    candidates.push({
      ms: options.minTransactionTimeoutMs,
      why: `minTransactionTimeoutMs (${options.minTransactionTimeoutMs} ms)`,
    });
  }
  const timing = options.checkpointTiming;
  if (timing) {
    const ms = timing.intervalMs + timing.timeoutMs + timing.restartDelayMs;
    candidates.push({
      ms,
      why:
        `checkpointTiming: checkpoint interval ${timing.intervalMs} ms + checkpoint timeout ${timing.timeoutMs} ms` +
        ` + restart delay ${timing.restartDelayMs} ms = ${ms} ms`,
    });
  }
  return candidates.sort((a, b) => b.ms - a.ms)[0];
}

/** Static checks of the transaction timeout, before any broker is asked. */
export function validateTransactionTimeout(options: {
  readonly transactionTimeoutMs?: number;
  readonly minTransactionTimeoutMs?: number;
  readonly checkpointTiming?: CheckpointTiming;
}): number {
  const timeout = options.transactionTimeoutMs;
  if (timeout === undefined) {
    throw new ConfigurationError(
      "transactionTimeoutMs",
      "is required for EXACTLY_ONCE: set it explicitly, above checkpoint interval + checkpoint timeout + restart delay and at most the broker's transaction.max.timeout.ms",
    );
  }
  requirePositiveInteger("transactionTimeoutMs", timeout);
  const minimum = minimumTransactionTimeout(options);
  if (minimum && timeout < minimum.ms) {
    throw new ConfigurationError(
      "transactionTimeoutMs",
      `${timeout} ms is below ${minimum.why}: Kafka would abort a pre-committed transaction before recovery could commit it`,
    );
  }
  return timeout;
}

/** Reads the broker's `transaction.max.timeout.ms` (DescribeConfigs) and refuses a timeout above it. */
export async function checkTransactionTimeoutAgainstBroker(
  kafka: Kafka,
  transactionTimeoutMs: number,
): Promise<number> {
  const admin = kafka.admin();
  try {
    // Inside the try: a connect that fails half way (the broker restarting) may hold a socket.
    await admin.connect();
    const { brokers } = await admin.describeCluster();
    let maximum: number | undefined;
    for (const broker of brokers) {
      const result = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [
          {
            type: kafkajs.ConfigResourceTypes.BROKER,
            name: String(broker.nodeId),
            configNames: ["transaction.max.timeout.ms"],
          },
        ],
      });
      const value = result.resources[0]?.configEntries.find(
        (e) => e.configName === "transaction.max.timeout.ms",
      )?.configValue;
      const parsed = value === undefined ? Number.NaN : Number(value);
      if (Number.isFinite(parsed)) maximum = maximum === undefined ? parsed : Math.min(maximum, parsed);
    }
    if (maximum === undefined) {
      throw new ConfigurationError(
        "transactionTimeoutMs",
        "could not read the broker's transaction.max.timeout.ms (DescribeConfigs) to validate the timeout",
      );
    }
    if (transactionTimeoutMs > maximum) {
      throw new ConfigurationError(
        "transactionTimeoutMs",
        `${transactionTimeoutMs} ms is above the broker's transaction.max.timeout.ms (${maximum} ms): ` +
          "InitProducerId would be refused; lower transactionTimeoutMs or raise transaction.max.timeout.ms",
      );
    }
    return maximum;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}
