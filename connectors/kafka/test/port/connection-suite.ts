/**
 * The contract every `KafkaConnection` adapter keeps (src/kafka-connection.ts), run against the
 * real broker: an adapter's test file is a call of {@link kafkaConnectionSuite}. A crashed
 * process is played by a second connection that only knows what a checkpoint would hold.
 */
import { uniqueName } from "@exactly/testkit/ids";
import { afterEach, describe, expect, it } from "vitest";
import { fence } from "../../src/fencing.ts";
import {
  type KafkaConnection,
  KafkaOffsetOutOfRangeError,
  KafkaUnknownTopicsError,
  type TopicMessages,
} from "../../src/kafka-connection.ts";
import { FENCED } from "../../src/kafka-errors.ts";

export interface SuiteServer {
  /** Opens a connection (not yet connected); `readCommitted` as the source's. */
  open(use?: { readonly readCommitted?: boolean }): KafkaConnection;
  /** Creates a topic and waits for its leaders. */
  createTopic(topic: string, partitions: number): Promise<void>;
}

const TIMEOUT_MS = 60_000;

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (e: unknown) => e,
  );
}

export function kafkaConnectionSuite(name: string, server: SuiteServer): void {
  describe(`KafkaConnection: ${name}`, () => {
    const opened: KafkaConnection[] = [];
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((c) => c.close()));
    });
    const connected = async (use?: { readonly readCommitted?: boolean }) => {
      const connection = server.open(use);
      opened.push(connection);
      await connection.connect();
      return connection;
    };
    const topicWith = async (partitions: number) => {
      const topic = uniqueName("port");
      await server.createTopic(topic, partitions);
      return topic;
    };
    const values = (topic: string, partition: number, ids: readonly number[]): TopicMessages[] => [
      { topic, messages: ids.map((id) => ({ partition, key: String(id), value: String(id) })) },
    ];
    /** Every committed value of a partition, read from 0 to its last stable offset. */
    const readAll = async (reader: KafkaConnection, topic: string, partition: number) => {
      const out: string[] = [];
      let offset = 0;
      for (;;) {
        const [fetched] = await reader.fetchCommitted({
          maxWaitMs: 0,
          maxBytes: 1 << 20,
          partitions: [{ topic, partition, fetchOffset: offset, maxBytes: 1 << 20 }],
        });
        if (!fetched) throw new Error(`no answer for ${topic}:${partition}`);
        for (const r of fetched.records) out.push(r.value?.toString() ?? "null");
        if (fetched.nextOffset !== undefined) offset = Number(fetched.nextOffset);
        if (offset >= Number(fetched.lastStableOffset ?? fetched.highWatermark)) return out;
      }
    };

    it("reads a topic's partitions, and names the topics the cluster does not have", async () => {
      const topic = await topicWith(3);
      const connection = await connected();
      expect(await connection.partitions([topic])).toEqual(new Map([[topic, [0, 1, 2]]]));
      const missing = uniqueName("no-such-topic");
      const error = await rejection(connection.partitions([topic, missing]));
      expect(error).toBeInstanceOf(KafkaUnknownTopicsError);
      expect((error as KafkaUnknownTopicsError).topics).toEqual([missing]);
    });

    it("creates a topic with its partitions and configs once, and answers what an existing one has", async () => {
      const topic = uniqueName("port-ensure");
      const connection = await connected();
      const configs = { "cleanup.policy": "delete", "retention.ms": "-1" };
      const made = await connection.ensureTopic({ topic, partitions: 3, configs });
      expect(made).toEqual({ created: true, partitions: 3, configs });
      // A second call (another process) finds it, and says what it has, not what was asked.
      const found = await connection.ensureTopic({ topic, partitions: 5, configs: { "cleanup.policy": "compact" } });
      expect(found).toEqual({ created: false, partitions: 3, configs: { "cleanup.policy": "delete" } });
      expect(await connection.partitions([topic])).toEqual(new Map([[topic, [0, 1, 2]]]));
    });

    it("deletes a partition's records before an offset: a fetch there is refused, the rest still read", async () => {
      const topic = await topicWith(1);
      const connection = await connected();
      const reader = await connected({ readCommitted: true });
      const producer = await connection.plainProducer({ idempotent: true });
      await producer.sendBatch(values(topic, 0, [1, 2, 3, 4]), -1);
      await connection.deleteRecordsBefore(topic, [{ partition: 0, offset: 2 }]);
      const [earliest] = await reader.listOffsets([{ topic, partition: 0 }], "earliest");
      expect(earliest?.offset).toBe(2);
      expect(
        await rejection(
          reader.fetchCommitted({
            maxWaitMs: 0,
            maxBytes: 1 << 20,
            partitions: [{ topic, partition: 0, fetchOffset: 0, maxBytes: 1 << 20 }],
          }),
        ),
      ).toBeInstanceOf(KafkaOffsetOutOfRangeError);
      const [rest] = await reader.fetchCommitted({
        maxWaitMs: 0,
        maxBytes: 1 << 20,
        partitions: [{ topic, partition: 0, fetchOffset: 2, maxBytes: 1 << 20 }],
      });
      expect(rest?.records.map((r) => r.value?.toString())).toEqual(["3", "4"]);
    });

    it("answers the brokers' transaction.max.timeout.ms", async () => {
      const connection = await connected();
      expect(await connection.transactionMaxTimeoutMs()).toEqual(expect.any(Number));
    });

    it("commits a transaction, and a read_committed fetch sees it once; an aborted one is never seen", async () => {
      const topic = await topicWith(1);
      const writer = await connected();
      const reader = await connected({ readCommitted: true });
      const aborted = await writer.beginTransaction({
        transactionalId: uniqueName("port-a"),
        transactionTimeoutMs: TIMEOUT_MS,
      });
      await aborted.sendBatch(values(topic, 0, [1, 2]));
      const committed = await writer.beginTransaction({
        transactionalId: uniqueName("port-c"),
        transactionTimeoutMs: TIMEOUT_MS,
      });
      await committed.sendBatch(values(topic, 0, [3]));
      await committed.sendBatch(values(topic, 0, [4, 5]));
      // Interleaved: the aborted transaction began first and ends last (Java's filter order).
      await writer.endTransaction(committed, true);
      await aborted.abort();
      await expect.poll(() => readAll(reader, topic, 0), { timeout: 15_000 }).toEqual(["3", "4", "5"]);
    });

    it("commits by the handle alone, from another connection, as a restarted process does", async () => {
      const topic = await topicWith(2);
      const crashed = await connected();
      const txn = await crashed.beginTransaction({
        transactionalId: uniqueName("port-h"),
        transactionTimeoutMs: TIMEOUT_MS,
      });
      await txn.sendBatch([...values(topic, 0, [1]), ...values(topic, 1, [2])]);
      const handle = { transactionalId: txn.transactionalId, producerId: txn.producerId, epoch: txn.epoch };
      await crashed.close();
      const successor = await connected();
      await successor.endTransaction(handle, true);
      // A repeated commit succeeds once the first has completed (CONCURRENT_TRANSACTIONS until then).
      await expect
        .poll(
          () =>
            successor.endTransaction(handle, true).then(
              () => "committed",
              (e: { type?: string }) => e.type,
            ),
          {
            timeout: 15_000,
          },
        )
        .toBe("committed");
      const reader = await connected({ readCommitted: true });
      await expect
        .poll(async () => [...(await readAll(reader, topic, 0)), ...(await readAll(reader, topic, 1))], {
          timeout: 15_000,
        })
        .toEqual(["1", "2"]);
    });

    it("fences an id: InitProducerId aborts what is open under it, and the old handle's commit is refused", async () => {
      const topic = await topicWith(1);
      const connection = await connected();
      const transactionalId = uniqueName("port-f");
      const fresh = await connection.initProducerId(uniqueName("port-new"), TIMEOUT_MS);
      expect(fresh.epoch).toBe(0);
      const old = await connection.beginTransaction({ transactionalId, transactionTimeoutMs: TIMEOUT_MS });
      await old.sendBatch(values(topic, 0, [1]));
      // CONCURRENT_TRANSACTIONS while the broker aborts what was open is the caller's to retry: the sinks' fence does.
      expect(await fence(connection, transactionalId, TIMEOUT_MS)).toBeGreaterThan(old.epoch);
      const refused = await rejection(connection.endTransaction(old, true));
      expect(FENCED.has(String((refused as { type?: unknown }).type))).toBe(true);
      const reader = await connected({ readCommitted: true });
      await expect.poll(() => readAll(reader, topic, 0), { timeout: 15_000 }).toEqual([]);
    });

    it("lists and describes an open transaction with the partitions it holds", async () => {
      const topic = await topicWith(2);
      const connection = await connected();
      const txn = await connection.beginTransaction({
        transactionalId: uniqueName("port-l"),
        transactionTimeoutMs: TIMEOUT_MS,
      });
      await txn.sendBatch(values(topic, 1, [1]));
      const listed = await connection.listTransactions(["Ongoing"]);
      expect(listed?.find((t) => t.transactionalId === txn.transactionalId)).toEqual({
        transactionalId: txn.transactionalId,
        producerId: txn.producerId,
        state: "Ongoing",
      });
      const described = await connection.describeTransaction(txn.transactionalId);
      expect(described).toMatchObject({
        transactionalId: txn.transactionalId,
        state: "Ongoing",
        timeoutMs: TIMEOUT_MS,
        producerId: txn.producerId,
        epoch: txn.epoch,
        partitions: [{ topic, partition: 1 }],
      });
      expect(described.startTimeMs).toBeGreaterThan(0);
      await txn.abort();
    });

    it("lists offsets: earliest, latest (the last stable offset under an open transaction) and by time", async () => {
      const topic = await topicWith(1);
      const writer = await connected();
      const plain = await writer.plainProducer({ idempotent: true });
      const before = Date.now();
      await plain.sendBatch(values(topic, 0, [1, 2, 3]), -1);
      const open = await writer.beginTransaction({
        transactionalId: uniqueName("port-o"),
        transactionTimeoutMs: TIMEOUT_MS,
      });
      await open.sendBatch(values(topic, 0, [4]));
      const reader = await connected({ readCommitted: true });
      const at = async (spec: Parameters<KafkaConnection["listOffsets"]>[1]) =>
        (await reader.listOffsets([{ topic, partition: 0 }], spec)).map((o) => o.offset);
      expect(await at("earliest")).toEqual([0]);
      expect(await at("latest")).toEqual([3]);
      expect(await at({ timestamp: before - 60_000 })).toEqual([0]);
      expect(await at({ timestamp: Date.now() + 3_600_000 })).toEqual([-1]);
      await open.abort();
    });

    it("keeps keys, null values and headers as sent", async () => {
      const topic = await topicWith(1);
      const writer = await connected();
      const plain = await writer.plainProducer({ idempotent: false });
      await plain.sendBatch(
        [
          {
            topic,
            messages: [
              { partition: 0, key: null, value: "no key", headers: { a: "1", b: Buffer.from([0, 255]) } },
              { partition: 0, key: "k", value: null, timestamp: "1700000000000" },
            ],
          },
        ],
        1,
      );
      const reader = await connected({ readCommitted: true });
      const [fetched] = await reader.fetchCommitted({
        maxWaitMs: 0,
        maxBytes: 1 << 20,
        partitions: [{ topic, partition: 0, fetchOffset: 0, maxBytes: 1 << 20 }],
      });
      const [first, second] = fetched?.records ?? [];
      expect(first?.key).toBeNull();
      expect(first?.value?.toString()).toBe("no key");
      expect(Buffer.from(first?.headers.a as Buffer).toString()).toBe("1");
      expect(Buffer.from(first?.headers.b as Buffer)).toEqual(Buffer.from([0, 255]));
      expect(second?.key?.toString()).toBe("k");
      expect(second?.value).toBeNull();
      expect(second?.timestamp).toBe(1700000000000);
      expect(fetched?.nextOffset).toBe("2");
    });

    it("refuses a fetch past a partition's end, naming the partition", async () => {
      const topic = await topicWith(1);
      const reader = await connected({ readCommitted: true });
      const error = await rejection(
        reader.fetchCommitted({
          maxWaitMs: 0,
          maxBytes: 1024,
          partitions: [{ topic, partition: 0, fetchOffset: 1000, maxBytes: 1024 }],
        }),
      );
      expect(error).toBeInstanceOf(KafkaOffsetOutOfRangeError);
      expect((error as KafkaOffsetOutOfRangeError).partitions).toEqual([
        expect.objectContaining({ topic, partition: 0 }),
      ]);
    });

    it("commits and reads a group's offsets without joining it", async () => {
      const topic = await topicWith(2);
      const connection = await connected();
      const groupId = uniqueName("port-g");
      await connection.commitGroupOffsets(groupId, [{ topic, partitions: [{ partition: 0, offset: "7" }] }]);
      const offsets = await connection.groupOffsets(groupId, [topic]);
      const partitions = offsets.find((o) => o.topic === topic)?.partitions ?? [];
      expect([...partitions].sort((a, b) => a.partition - b.partition)).toEqual([
        expect.objectContaining({ partition: 0, offset: "7" }),
        expect.objectContaining({ partition: 1, offset: "-1" }),
      ]);
    });
  });
}
