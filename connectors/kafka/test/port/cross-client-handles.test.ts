// A transaction is a handle, not a client's object: one begun through the kafkajs adapter is
// listed, described, committed or fenced through the @platformatic/kafka adapter, as a process
// restarted on the other client would.
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import { afterEach, describe, expect, it } from "vitest";
import type { KafkaConnection } from "../../src/kafka-connection.ts";
import { FENCED } from "../../src/kafka-errors.ts";
import { openKafkajsConnection } from "../../src/kafkajs/kafkajs-connection.ts";
import { openPlatformaticConnection } from "../../src/platformatic/platformatic-connection.ts";
import { createTopic, newKafka, readCommitted } from "../helpers.ts";

const kafka = newKafka(kafkaBrokers());
const TIMEOUT_MS = 60_000;

describe("transaction handles across clients", () => {
  const opened: KafkaConnection[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((c) => c.close()));
  });
  const connect = async (connection: KafkaConnection) => {
    opened.push(connection);
    await connection.connect();
    return connection;
  };

  it("lists, describes and commits by handle through @platformatic/kafka what kafkajs began", async () => {
    const topic = uniqueName("handles");
    await createTopic(kafka, topic, 2);
    const writer = await connect(openKafkajsConnection({ brokers: kafkaBrokers() }));
    const txn = await writer.beginTransaction({
      transactionalId: uniqueName("handles-c"),
      transactionTimeoutMs: TIMEOUT_MS,
    });
    await txn.sendBatch([
      {
        topic,
        messages: [
          { partition: 1, value: "1" },
          { partition: 0, value: "2" },
        ],
      },
    ]);
    const other = await connect(openPlatformaticConnection({ brokers: kafkaBrokers() }));
    const listed = await other.listTransactions(["Ongoing"]);
    expect(listed?.find((t) => t.transactionalId === txn.transactionalId)).toEqual({
      transactionalId: txn.transactionalId,
      producerId: txn.producerId,
      state: "Ongoing",
    });
    const described = await other.describeTransaction(txn.transactionalId);
    expect(described).toMatchObject({
      state: "Ongoing",
      producerId: txn.producerId,
      epoch: txn.epoch,
      timeoutMs: TIMEOUT_MS,
    });
    expect([...described.partitions].sort((a, b) => a.partition - b.partition)).toEqual([
      { topic, partition: 0 },
      { topic, partition: 1 },
    ]);
    await other.endTransaction(txn, true);
    expect((await readCommitted(kafka, topic, 2)).sort()).toEqual(["1", "2"]);
  });

  it("fences through @platformatic/kafka: the open transaction is aborted and its handle's commit refused", async () => {
    const topic = uniqueName("handles-f");
    await createTopic(kafka, topic, 1);
    const writer = await connect(openKafkajsConnection({ brokers: kafkaBrokers() }));
    const old = await writer.beginTransaction({
      transactionalId: uniqueName("handles-f"),
      transactionTimeoutMs: TIMEOUT_MS,
    });
    await old.sendBatch([{ topic, messages: [{ partition: 0, value: "never" }] }]);
    const other = await connect(openPlatformaticConnection({ brokers: kafkaBrokers() }));
    expect((await other.initProducerId(uniqueName("handles-new"), TIMEOUT_MS)).epoch).toBe(0);
    let fenced: { epoch: number } | undefined;
    for (let attempt = 0; fenced === undefined; attempt++) {
      try {
        fenced = await other.initProducerId(old.transactionalId, TIMEOUT_MS);
      } catch (error) {
        // CONCURRENT_TRANSACTIONS while the broker aborts what was open: the caller's to retry.
        if ((error as { type?: unknown }).type !== "CONCURRENT_TRANSACTIONS" || attempt > 50) throw error;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    expect(fenced.epoch).toBeGreaterThan(old.epoch);
    const refused = await other.endTransaction(old, true).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(FENCED.has(String((refused as { type?: unknown }).type)), String(refused)).toBe(true);
    expect(await readCommitted(kafka, topic, 1)).toEqual([]);
  });
});
