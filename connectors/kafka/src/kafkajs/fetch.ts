/**
 * Fetching with read_committed isolation, one request to one broker, and dropping what a
 * read_committed reader must not see: control records and records of aborted transactions.
 * Not kafkajs's consumer: its aborted-transaction filter lets records of interleaved aborted
 * transactions through (see {@link withoutAborted}), and its group protocol is not wanted here.
 */
import type { FetchedPartition, FetchedRecord } from "../kafka-connection.ts";
import { checkBroker } from "./cluster.ts";
import { NO_ERROR } from "./error-codes.ts";
import { decodeFetchResponse, FIRST_FETCH_VERSION, LAST_FETCH_VERSION } from "./fetch-response.ts";
import { expectFunction, expectFunctions, internals, KafkajsInternalsError, requireInternal } from "./load.ts";
import type { InternalBroker, RawMessage } from "./shapes.ts";
import { withMethods } from "./views.ts";

type FetchArguments = Parameters<InternalBroker["fetch"]>[0];
type FetchResult = Awaited<ReturnType<InternalBroker["fetch"]>>;

/** kafkajs's Broker#fetch, run on a view of the broker (so its request, shuffle and send path stay kafkajs's). */
const brokerFetch = (() => {
  const Broker = expectFunction("src/broker", requireInternal("src/broker/index.js"));
  expectFunctions("Broker.prototype", Broker.prototype, ["fetch"]);
  return (Broker.prototype as { fetch: (this: InternalBroker, args: FetchArguments) => Promise<FetchResult> }).fetch;
})();

/** The API key of Fetch, as kafkajs's request table names it. */
const FETCH = (() => {
  const apiKeys = requireInternal("src/protocol/requests/apiKeys.js") as { Fetch?: unknown };
  if (apiKeys.Fetch !== 1) throw new KafkajsInternalsError("apiKeys.Fetch is not 1");
  return 1;
})();

type RequestFactory = (args: unknown) => {
  request: { apiVersion: number };
  response: { decode(raw: Buffer): Promise<unknown>; parse(data: unknown): Promise<unknown> };
};

/**
 * `broker.fetch(args)` with the response decoded by fetch-response.ts for the versions it reads
 * (kafkajs's Broker#fetch looks up its Fetch request through `lookupRequest`; the view answers
 * the same request with another `decode`). Any other version decodes as kafkajs does.
 */
function fetchDecodedHere(broker: InternalBroker, args: FetchArguments): Promise<FetchResult> {
  expectFunctions("Broker", broker, ["lookupRequest"]);
  const lookupRequest = (broker as unknown as { lookupRequest(apiKey: number, definition: unknown): RequestFactory })
    .lookupRequest;
  const view = withMethods(broker, {
    lookupRequest: (apiKey: number, definition: unknown): RequestFactory => {
      const make = lookupRequest.call(broker, apiKey, definition);
      if (apiKey !== FETCH) return make;
      return (request) => {
        const built = make(request);
        const version = built.request.apiVersion;
        if (version < FIRST_FETCH_VERSION || version > LAST_FETCH_VERSION) return built;
        return {
          ...built,
          response: { ...built.response, decode: (raw: Buffer) => decodeFetchResponse(version, raw) },
        };
      };
    },
  });
  return brokerFetch.call(view, args);
}

interface AbortedTransaction {
  producerId: string;
  firstOffset: string;
}

const ABORT_MARKER_KEY = Buffer.from([0, 0, 0, 0]);

/**
 * Drops control records and the records of aborted transactions, as Kafka's Java consumer
 * does: aborted transactions ordered by first offset, a producer's records skipped from its
 * aborted transaction's first offset until its abort marker. kafkajs 2.2.4's own filter
 * (consumer/filterAbortedMessages.js) takes the broker's list in the order given, which is
 * by abort-marker offset; when two aborted transactions interleave on one partition, the
 * records of the one that began first but ended last leak to read_committed readers. The
 * tests show it (test/kafkajs-internals.test.ts).
 */
function withoutAborted(
  messages: readonly RawMessage[],
  aborted: readonly AbortedTransaction[] | undefined,
): RawMessage[] {
  if (!aborted || aborted.length === 0) {
    // Nothing aborted in this range (the common case): only the control records go.
    const out: RawMessage[] = [];
    for (const message of messages) if (!message.isControlRecord) out.push(message);
    return out;
  }
  const queue = [...aborted].sort((a, b) => {
    const d = BigInt(a.firstOffset) - BigInt(b.firstOffset);
    return d < 0n ? -1 : d > 0n ? 1 : 0;
  });
  const abortedProducers = new Set<string>();
  const out: RawMessage[] = [];
  for (const message of messages) {
    const offset = BigInt(message.offset);
    while (queue.length > 0 && BigInt((queue[0] as AbortedTransaction).firstOffset) <= offset) {
      abortedProducers.add(String((queue.shift() as AbortedTransaction).producerId));
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

/** a >= b for two non-negative INT64 decimal strings; Numbers while exact, else BigInts. */
function offsetAtLeast(a: string, b: string): boolean {
  if (a.length <= 15 && b.length <= 15) return Number(a) >= Number(b);
  return BigInt(a) >= BigInt(b);
}

/**
 * The fetched messages at or after the fetch offset, in order: a fetch can begin inside a
 * record batch, whose earlier records the broker returns too (as kafkajs's consumer
 * Batch.messagesWithinOffset drops them; that class also runs kafkajs's own aborted filter,
 * which is not used here).
 */
function withinOffset(messages: readonly RawMessage[], fetchOffset: string): readonly RawMessage[] {
  let first = 0;
  while (first < messages.length && !offsetAtLeast((messages[first] as RawMessage).offset, fetchOffset)) first++;
  if (first === 0) return messages;
  return messages.slice(first);
}

/**
 * One Fetch request to `broker` with read_committed isolation; records of aborted
 * transactions and control records are dropped (see {@link withoutAborted}).
 */
export async function fetchCommitted(
  broker: InternalBroker,
  request: {
    maxWaitTimeMs: number;
    maxBytes: number;
    partitions: Array<{ topic: string; partition: number; fetchOffset: string; maxBytes: number }>;
  },
): Promise<FetchedPartition[]> {
  checkBroker(broker);
  const byTopic = new Map<string, Array<{ partition: number; fetchOffset: string; maxBytes: number }>>();
  for (const p of request.partitions) {
    const list = byTopic.get(p.topic) ?? [];
    list.push({ partition: p.partition, fetchOffset: p.fetchOffset, maxBytes: p.maxBytes });
    byTopic.set(p.topic, list);
  }
  const { responses } = await fetchDecodedHere(broker, {
    isolationLevel: internals.READ_COMMITTED,
    maxWaitTime: request.maxWaitTimeMs,
    minBytes: 1,
    maxBytes: request.maxBytes,
    topics: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })),
  });
  const out: FetchedPartition[] = [];
  for (const { topicName, partitions } of responses) {
    for (const data of partitions) {
      const fetchOffset = request.partitions.find((p) => p.topic === topicName && p.partition === data.partition)
        ?.fetchOffset as string;
      // A partition the broker refused gets nothing this time (the port leaves it out).
      if (data.errorCode !== NO_ERROR) continue;
      const within = withinOffset(data.messages, fetchOffset);
      const last = within[within.length - 1];
      const committed = withoutAborted(within, data.abortedTransactions as AbortedTransaction[]);
      // The decoded messages themselves, not copies: one object a record fewer.
      for (const message of committed) message.headers ??= {};
      out.push({
        topic: topicName,
        partition: data.partition,
        records: committed as FetchedRecord[],
        nextOffset: last ? (BigInt(last.offset) + 1n).toString() : undefined,
        highWatermark: data.highWatermark,
        lastStableOffset: data.lastStableOffset,
      });
    }
  }
  return out;
}
