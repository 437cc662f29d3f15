/**
 * Producing on @platformatic/kafka's public exports: the Produce body is ours
 * (../protocol/record-batch.ts, one buffer per request), sent as a Produce v7 request on the
 * leader's pooled socket with the client's own response parser. The client's Producer is not
 * used: it keeps one transactional id per instance (a pool of sockets each), sends
 * InitProducerId with 0/0 rather than -1/-1, and cannot end a transaction by a stored handle.
 *
 * Order: sends are dispatched one at a time, in call order (one queue per producer): each
 * places its messages (Kafka's default partitioner where none is given), takes its
 * partitions' sequence numbers and hands its requests to the sockets before the next begins,
 * while the answers of several are awaited side by side. So the sends of
 * one producer land in the order they were made within every partition, however many are in
 * flight. A failed send is not retried here: the transaction it belongs to is aborted by the
 * sink, and an idempotent producer's later sends would be out of sequence, so it refuses them.
 */
import { type Admin, type Connection, createAPI, produceV7, Writer } from "@platformatic/kafka";
import { type KafkaMessage, KafkaUnknownTopicsError, type TopicMessages } from "../kafka-connection.ts";
import { DefaultPartitioner } from "../protocol/partitioner.ts";
import { type BatchCompression, encodeProduceRequestBody, type PartitionRecords } from "../protocol/record-batch.ts";
import { inPortTerms, KafkaProtocolError } from "./errors.ts";

/** Produce v7 with a body we encoded, answered by the client's own parser (per-partition errors reject). */
const producePrebuilt = createAPI<[body: Buffer], unknown>(
  0,
  7,
  (body: Buffer) => Writer.create().append(body),
  produceV7.parseResponse,
  false,
  false,
);

/** How long the broker may take to have every in-sync replica hold a send (Kafka's `request.timeout.ms`). */
const PRODUCE_TIMEOUT_MS = 30_000;
const MAX_SEQUENCE = 0x7fffffff;

export interface ProducerIdentity {
  /** null outside transactions. */
  readonly transactionalId: string | null;
  /** -1 for a producer that is not idempotent. */
  readonly producerId: bigint;
  readonly producerEpoch: number;
}

/**
 * One producer identity's sends. `beforeSend` runs, in order, before a send's requests go out,
 * with the partitions it writes (a transaction adds the new ones to itself there).
 */
export class ProducerSession {
  private readonly admin: Admin;
  private readonly identity: ProducerIdentity;
  private readonly compression: BatchCompression | undefined;
  private readonly beforeSend: ((partitions: ReadonlyMap<string, ReadonlySet<number>>) => Promise<void>) | undefined;
  /** Next sequence number per "topic\0partition"; unused (-1) without a producer id. */
  private readonly sequences = new Map<string, number>();
  private readonly partitioner = new DefaultPartitioner();
  private queue: Promise<unknown> = Promise.resolve();
  private failed: unknown;

  constructor(
    admin: Admin,
    identity: ProducerIdentity,
    compression: BatchCompression | undefined,
    beforeSend?: (partitions: ReadonlyMap<string, ReadonlySet<number>>) => Promise<void>,
  ) {
    this.admin = admin;
    this.identity = identity;
    this.compression = compression;
    this.beforeSend = beforeSend;
  }

  /** Resolves once the brokers acknowledged every message with `acks`. */
  sendBatch(topicMessages: readonly TopicMessages[], acks: -1 | 1): Promise<void> {
    if (this.failed !== undefined) {
      return Promise.reject(
        new Error("an earlier send of this producer failed; its later sends would be out of sequence", {
          cause: this.failed,
        }),
      );
    }
    const dispatched = this.queue.then(() => this.dispatch(topicMessages, acks));
    this.queue = dispatched.catch(() => {});
    return dispatched
      .then((answers) => Promise.all(answers))
      .then(
        () => undefined,
        (error: unknown) => {
          if (this.identity.producerId >= 0n) this.failed = error;
          throw error;
        },
      );
  }

  /**
   * The messages by topic and partition (a message without one placed by the default
   * partitioner), each partition's sequence taken here: sends are dispatched one at a time,
   * in call order.
   */
  private group(
    topicMessages: readonly TopicMessages[],
    partitionCount: (topic: string) => number,
  ): Map<string, Map<number, PartitionRecords>> {
    const byTopic = new Map<string, Map<number, KafkaMessage[]>>();
    for (const { topic, messages } of topicMessages) {
      let partitions = byTopic.get(topic);
      if (!partitions) {
        partitions = new Map();
        byTopic.set(topic, partitions);
      }
      const count = partitionCount(topic);
      for (const message of messages) {
        const partition = message.partition ?? this.partitioner.partition(topic, message.key, count);
        const list = partitions.get(partition);
        if (list) list.push(message);
        else partitions.set(partition, [message]);
      }
    }
    const idempotent = this.identity.producerId >= 0n;
    const out = new Map<string, Map<number, PartitionRecords>>();
    for (const [topic, partitions] of byTopic) {
      const records = new Map<number, PartitionRecords>();
      for (const [partition, messages] of partitions) {
        let firstSequence = -1;
        if (idempotent) {
          const key = `${topic}\0${partition}`;
          firstSequence = this.sequences.get(key) ?? 0;
          // Kafka's sequences wrap to 0 after INT32's largest.
          this.sequences.set(key, (firstSequence + messages.length) % (MAX_SEQUENCE + 1));
        }
        records.set(partition, { partition, messages, firstSequence });
      }
      out.set(topic, records);
    }
    return out;
  }

  /** Hands one send's requests to the leaders' sockets; resolves with their answers still to come. */
  private async dispatch(topicMessages: readonly TopicMessages[], acks: -1 | 1): Promise<Promise<unknown>[]> {
    const topicNames = [...new Set(topicMessages.map((t) => t.topic))];
    const metadata = await inPortTerms("Metadata", () => this.admin.metadata({ topics: topicNames }));
    const grouped = this.group(topicMessages, (topic) => {
      const count = metadata.topics.get(topic)?.partitionsCount ?? 0;
      if (count <= 0) throw new KafkaUnknownTopicsError([topic]);
      return count;
    });
    if (this.beforeSend) {
      await this.beforeSend(new Map([...grouped].map(([topic, partitions]) => [topic, new Set(partitions.keys())])));
    }
    const byLeader = new Map<number, Map<string, PartitionRecords[]>>();
    for (const [topic, partitions] of grouped) {
      const described = metadata.topics.get(topic);
      for (const [partition, records] of partitions) {
        const leader = described?.partitions[partition]?.leader;
        if (leader === undefined || leader < 0) {
          // A moved leader is learnt for the next send; this one fails (the sink aborts and retries).
          await this.admin.metadata({ topics: [topic], forceUpdate: true }).catch(() => {});
          throw new KafkaProtocolError("LEADER_NOT_AVAILABLE", true, `no leader known for ${topic}:${partition}`);
        }
        let topics = byLeader.get(leader);
        if (!topics) {
          topics = new Map();
          byLeader.set(leader, topics);
        }
        const list = topics.get(topic);
        if (list) list.push(records);
        else topics.set(topic, [records]);
      }
    }
    const sockets: Array<[Connection, Map<string, PartitionRecords[]>]> = [];
    for (const [leader, topics] of byLeader) {
      const broker = metadata.brokers.get(leader);
      if (!broker) throw new Error(`broker ${leader} is not in the metadata`);
      sockets.push([
        await inPortTerms("connecting to a leader", () =>
          this.admin.connections.get({ host: broker.host, port: broker.port }),
        ),
        topics,
      ]);
    }
    // Handed to the sockets synchronously, in call order.
    return sockets.map(([socket, topics]) => {
      const body = encodeProduceRequestBody({
        transactionalId: this.identity.transactionalId,
        acks,
        timeout: PRODUCE_TIMEOUT_MS,
        producerId: this.identity.producerId.toString(),
        producerEpoch: this.identity.producerEpoch,
        topicData: [...topics].map(([topic, partitions]) => ({ topic, partitions })),
        ...(this.compression ? { compression: this.compression } : {}),
      });
      return inPortTerms("Produce", () => producePrebuilt.async(socket, body));
    });
  }
}
