/**
 * What a read_committed reader may see of a decoded Fetch response, whatever client fetched
 * it: the records at or after the fetch offset, without control records and without the
 * records of aborted transactions, and where the next fetch starts.
 */
import type { FetchedPartition, FetchedRecord } from "../kafka-connection.ts";
import type { DecodedPartition, DecodedRecord } from "./fetch-response.ts";

const NO_ERROR = 0;

interface AbortedTransaction {
  producerId: string;
  firstOffset: string;
}

const ABORT_MARKER_KEY = Buffer.from([0, 0, 0, 0]);

/**
 * Drops control records and the records of aborted transactions, as Kafka's Java consumer
 * does: aborted transactions ordered by first offset, a producer's records skipped from its
 * aborted transaction's first offset until its abort marker. A filter that takes the broker's
 * list in the order given (by abort-marker offset, as kafkajs 2.2.4's does) lets the records
 * of two interleaved aborted transactions leak: the one that began first but ended last.
 */
function withoutAborted(
  messages: readonly DecodedRecord[],
  aborted: readonly AbortedTransaction[] | undefined,
): DecodedRecord[] {
  if (!aborted || aborted.length === 0) {
    // Nothing aborted in this range (the common case): only the control records go.
    const out: DecodedRecord[] = [];
    for (const message of messages) if (!message.isControlRecord) out.push(message);
    return out;
  }
  const queue = aborted
    .map((a) => ({ producerId: a.producerId, firstOffset: Number(a.firstOffset) }))
    .sort((a, b) => a.firstOffset - b.firstOffset);
  const abortedProducers = new Set<string>();
  const out: DecodedRecord[] = [];
  for (const message of messages) {
    while (queue.length > 0 && (queue[0] as { firstOffset: number }).firstOffset <= message.offset) {
      abortedProducers.add(String((queue.shift() as { producerId: string }).producerId));
    }
    const producerId = message.batchContext ? String(message.batchContext.producerId) : undefined;
    if (message.isControlRecord) {
      if (producerId !== undefined && message.key && Buffer.from(message.key).equals(ABORT_MARKER_KEY)) {
        abortedProducers.delete(producerId);
      }
      continue;
    }
    if (message.batchContext?.inTransaction && producerId !== undefined && abortedProducers.has(producerId)) continue;
    out.push(message);
  }
  return out;
}

/**
 * The fetched messages at or after the fetch offset, in order: a fetch can begin inside a
 * record batch, whose earlier records the broker returns too (Kafka's consumers drop them).
 */
function withinOffset(messages: readonly DecodedRecord[], fetchOffset: number): readonly DecodedRecord[] {
  let first = 0;
  while (first < messages.length && (messages[first] as DecodedRecord).offset < fetchOffset) first++;
  if (first === 0) return messages;
  return messages.slice(first);
}

/**
 * The committed records of each partition of a decoded response. A partition the broker
 * refused gets nothing this time (the port leaves it out). The decoded records themselves are
 * returned, not copies: one object a record fewer.
 */
export function committedPartitions(
  responses: ReadonlyArray<{ topicName: string; partitions: readonly DecodedPartition[] }>,
  asked: ReadonlyArray<{ topic: string; partition: number; fetchOffset: string | number }>,
): FetchedPartition[] {
  const out: FetchedPartition[] = [];
  for (const { topicName, partitions } of responses) {
    for (const data of partitions) {
      if (data.errorCode !== NO_ERROR) continue;
      const fetchOffset = asked.find((p) => p.topic === topicName && p.partition === data.partition)?.fetchOffset;
      if (fetchOffset === undefined) continue;
      const within = withinOffset(data.messages, Number(fetchOffset));
      const last = within[within.length - 1];
      const committed = withoutAborted(within, data.abortedTransactions);
      out.push({
        topic: topicName,
        partition: data.partition,
        records: committed as FetchedRecord[],
        nextOffset: last ? String(last.offset + 1) : undefined,
        highWatermark: data.highWatermark,
        lastStableOffset: data.lastStableOffset,
      });
    }
  }
  return out;
}
