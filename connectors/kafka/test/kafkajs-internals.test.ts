// The kafkajs internals the sink relies on, proved against the real broker: resuming a
// pre-committed transaction by {transactionalId, producerId, epoch} from another connection,
// repeating that commit, listing and fencing a lingering transaction, and a stale epoch
// never committing a later transaction of the same id (FLINK-8132).

import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import type { Kafka } from "kafkajs";
import { describe, expect, it } from "vitest";
import { createCluster, type InternalCluster } from "../src/kafkajs/cluster.ts";
import { PINNED_KAFKAJS_VERSION } from "../src/kafkajs/load.ts";
import { beginTransaction } from "../src/kafkajs/producers.ts";
import { endTransaction, fenceTransactionalId, listTransactions } from "../src/kafkajs/transactions.ts";
import { createTopic, newKafka, partitionEnds, readCommitted } from "./helpers.ts";

const TIMEOUT = 60_000;

async function withCluster<R>(kafka: Kafka, fn: (cluster: InternalCluster) => Promise<R>): Promise<R> {
  const cluster = createCluster(kafka);
  await cluster.connect();
  try {
    return await fn(cluster);
  } finally {
    await cluster.disconnect();
  }
}

async function openTransaction(
  kafka: Kafka,
  cluster: InternalCluster,
  transactionalId: string,
  topic: string,
  values: string[],
) {
  const producer = await beginTransaction(kafka, cluster, { transactionalId, transactionTimeoutMs: TIMEOUT });
  await producer.sendBatch([{ topic, messages: values.map((value) => ({ value })) }]);
  return producer;
}

describe("kafkajs internals", () => {
  it(`runs on kafkajs ${PINNED_KAFKAJS_VERSION}`, async () => {
    const { createRequire } = await import("node:module");
    const version = (createRequire(import.meta.url)("kafkajs/package.json") as { version: string }).version;
    expect(version).toBe(PINNED_KAFKAJS_VERSION);
  });

  it("I5: commits a pre-committed transaction from another connection by producer id and epoch, and a repeat is harmless", async () => {
    const kafka = newKafka(kafkaBrokers());
    const topic = uniqueName("internals-resume");
    await createTopic(kafka, topic);
    const id = uniqueName("resume-txn");
    // The first "process": begins, writes and flushes, then goes away without committing.
    const handle = await withCluster(kafka, async (cluster) => {
      const producer = await openTransaction(kafka, cluster, id, topic, ["a", "b"]);
      return { transactionalId: producer.transactionalId, producerId: producer.producerId, epoch: producer.epoch };
    });
    expect(Number(handle.producerId)).toBeGreaterThanOrEqual(0);
    const [before] = await partitionEnds(kafka, topic, 1);
    expect(before?.lastStableOffset, "the open transaction holds the LSO back").not.toBe(before?.highWatermark);

    // A second "process" knows only the stored handle.
    await withCluster(kafka, (cluster) => endTransaction(cluster, handle, true));
    // Committing again (recovery repeating a commit) succeeds and changes nothing. Right after
    // the first, the coordinator may still be writing its markers and answer
    // CONCURRENT_TRANSACTIONS, which the sink retries as the coordinator's retriable answer.
    await withCluster(kafka, (cluster) => retryConcurrent(() => endTransaction(cluster, handle, true)));

    expect(await readCommitted(kafka, topic, 1)).toEqual(["a", "b"]);
    const [after] = await partitionEnds(kafka, topic, 1);
    expect(after?.lastStableOffset).toBe(after?.highWatermark);
  });

  it("I4: lists a lingering transaction, and fencing its id aborts it and unblocks read_committed readers", async () => {
    const kafka = newKafka(kafkaBrokers());
    const topic = uniqueName("internals-linger");
    await createTopic(kafka, topic);
    const id = uniqueName("linger-txn");
    await withCluster(kafka, (cluster) => openTransaction(kafka, cluster, id, topic, ["lingering"]));

    await withCluster(kafka, async (cluster) => {
      const listed = await listTransactions(cluster, ["Ongoing"]);
      expect(listed, "Kafka 4 answers ListTransactions").toBeDefined();
      expect(listed?.find((t) => t.transactionalId === id)?.state).toBe("Ongoing");
      const fenced = await retryConcurrent(() => fenceTransactionalId(cluster, id, TIMEOUT));
      expect(fenced.epoch).toBeGreaterThan(0);
      const after = await listTransactions(cluster, ["Ongoing"]);
      expect(after?.some((t) => t.transactionalId === id)).toBe(false);
    });

    expect(await readCommitted(kafka, topic, 1)).toEqual([]);
    const [ends] = await partitionEnds(kafka, topic, 1);
    expect(ends?.lastStableOffset).toBe(ends?.highWatermark);
  });

  it("fencing an id the broker never saw answers epoch 0", async () => {
    const kafka = newKafka(kafkaBrokers());
    const fenced = await withCluster(kafka, (cluster) => fenceTransactionalId(cluster, uniqueName("fresh"), TIMEOUT));
    expect(fenced.epoch).toBe(0);
  });

  it("a stale resume never commits a later transaction that reused the id", async () => {
    const kafka = newKafka(kafkaBrokers());
    const topic = uniqueName("internals-stale");
    await createTopic(kafka, topic);
    const id = uniqueName("reused-txn");
    await withCluster(kafka, async (cluster) => {
      const first = await openTransaction(kafka, cluster, id, topic, ["first"]);
      const stale = { transactionalId: id, producerId: first.producerId, epoch: first.epoch };
      // The id is initialised again: the first transaction is aborted, a second one begins.
      const second = await openTransaction(kafka, cluster, id, topic, ["second"]);
      expect(second.epoch).toBeGreaterThan(first.epoch);

      const error = await endTransaction(cluster, stale, true).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((error as { type?: string } | undefined)?.type).toBe("INVALID_PRODUCER_EPOCH");

      // The second transaction is still open: the stale commit did not touch it.
      const [open] = await partitionEnds(kafka, topic, 1);
      expect(open?.lastStableOffset).not.toBe(open?.highWatermark);
      await endTransaction(cluster, second, true);
    });
    expect(await readCommitted(kafka, topic, 1)).toEqual(["second"]);
  });

  it("drops records of interleaved aborted transactions (kafkajs's own filter lets them through)", async () => {
    const kafka = newKafka(kafkaBrokers());
    const topic = uniqueName("internals-interleaved");
    await createTopic(kafka, topic);
    await withCluster(kafka, async (cluster) => {
      // X begins first and is aborted last: the broker lists Y's abort before X's.
      const x = await openTransaction(kafka, cluster, uniqueName("x"), topic, ["x1"]);
      const y = await openTransaction(kafka, cluster, uniqueName("y"), topic, ["y1"]);
      await x.sendBatch([{ topic, messages: [{ value: "x2" }] }]);
      await endTransaction(cluster, y, false);
      await x.sendBatch([{ topic, messages: [{ value: "x3" }] }]);
      await endTransaction(cluster, x, false);
      const z = await openTransaction(kafka, cluster, uniqueName("z"), topic, ["committed"]);
      await endTransaction(cluster, z, true);
    });
    expect(await readCommitted(kafka, topic, 1)).toEqual(["committed"]);
  });

  it("answers INVALID_TXN_STATE when committing an aborted transaction", async () => {
    const kafka = newKafka(kafkaBrokers());
    const topic = uniqueName("internals-aborted");
    await createTopic(kafka, topic);
    const id = uniqueName("aborted-txn");
    await withCluster(kafka, async (cluster) => {
      const producer = await openTransaction(kafka, cluster, id, topic, ["x"]);
      await endTransaction(cluster, producer, false);
      const error = await retryConcurrent(() => endTransaction(cluster, producer, true)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((error as { type?: string } | undefined)?.type).toBe("INVALID_TXN_STATE");
    });
    expect(await readCommitted(kafka, topic, 1)).toEqual([]);
  });
});

/** Retries while the coordinator is still completing the previous transaction of the id. */
async function retryConcurrent<R>(fn: () => Promise<R>): Promise<R> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if ((error as { type?: string }).type !== "CONCURRENT_TRANSACTIONS" || attempt > 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
