// Smoke test of the Kafka service: transactions work end to end on a single broker. A committed
// transaction is visible to a read_committed consumer, an aborted one is not (though its records
// are in the log, as a read_uncommitted consumer shows).

import { randomUUID } from "node:crypto";
import kafkajs, { type Kafka } from "kafkajs";
import { afterAll, describe, expect, it } from "vitest";
import { kafkaBrokers } from "../endpoints.ts";

const run = randomUUID().slice(0, 8);
const topic = `smoke-txn-${run}`;

function client(): Kafka {
  return new kafkajs.Kafka({
    clientId: `smoke-${run}`,
    brokers: kafkaBrokers(),
    // kafkajs logs retriable errors (CONCURRENT_TRANSACTIONS right after a commit, coordinator
    // not yet available) at ERROR level before retrying them; real failures reject instead.
    logLevel: kafkajs.logLevel.NOTHING,
  });
}

/** Every value on the topic, as a consumer with the given isolation level sees it. */
async function readAll(kafka: Kafka, readUncommitted: boolean, last: string): Promise<string[]> {
  const consumer = kafka.consumer({
    groupId: `smoke-${run}-${readUncommitted ? "uncommitted" : "committed"}`,
    readUncommitted,
  });
  const values: string[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    // The last committed record follows every aborted one, so once it arrives the consumer has
    // read past the aborted records: anything missing was filtered, not merely not yet fetched.
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`"${last}" not consumed; got ${JSON.stringify(values)}`)),
        60_000,
      );
      consumer
        .run({
          eachMessage: async ({ message }) => {
            const value = message.value?.toString() ?? "";
            values.push(value);
            if (value === last) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return values;
}

describe("Kafka service", () => {
  // Created inside the test, not in a hook: without an endpoint the test itself fails (a failing
  // beforeAll would only mark it skipped).
  let created: Kafka | undefined;

  afterAll(async () => {
    const kafka = created;
    if (!kafka) return;
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
  });

  it("shows committed transactions to read_committed consumers and hides aborted ones", async () => {
    const kafka = client();
    created = kafka;
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true });
    await admin.disconnect();

    const producer = kafka.producer({ transactionalId: `smoke-${run}`, idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    try {
      const committed = await producer.transaction();
      await committed.send({ topic, messages: [{ value: "committed-1" }, { value: "committed-2" }] });
      await committed.commit();

      const aborted = await producer.transaction();
      await aborted.send({ topic, messages: [{ value: "aborted-1" }, { value: "aborted-2" }] });
      await aborted.abort();

      const after = await producer.transaction();
      await after.send({ topic, messages: [{ value: "committed-3" }] });
      await after.commit();
    } finally {
      await producer.disconnect();
    }

    expect(await readAll(kafka, false, "committed-3")).toEqual(["committed-1", "committed-2", "committed-3"]);
    expect(await readAll(kafka, true, "committed-3")).toEqual([
      "committed-1",
      "committed-2",
      "aborted-1",
      "aborted-2",
      "committed-3",
    ]);
  });
});
