/**
 * Fetching with read_committed isolation, one request to one broker, on kafkajs's Broker#fetch,
 * decoded by ../protocol/fetch-response.ts and filtered by ../protocol/committed-records.ts.
 * Not kafkajs's consumer: its aborted-transaction filter lets records of interleaved aborted
 * transactions through, and its group protocol is not wanted here.
 */
import kafkajs from "kafkajs";
import type { FetchedPartition } from "../kafka-connection.ts";
import { committedPartitions } from "../protocol/committed-records.ts";
import {
  type DecodedFetchResponse,
  type Decompress,
  decodeFetchResponse,
  FIRST_FETCH_VERSION,
  LAST_FETCH_VERSION,
  UnsupportedCompressionError,
} from "../protocol/fetch-response.ts";
import { checkBroker } from "./cluster.ts";
import { expectFunction, expectFunctions, internals, KafkajsInternalsError, requireInternal } from "./load.ts";
import type { InternalBroker } from "./shapes.ts";
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

/** A compressed batch's records through kafkajs's public codec table (GZIP built in; others registered by the user). */
const decompressWithKafkajs: Decompress = async (codec, data) => {
  const make = (kafkajs.CompressionCodecs as Partial<Record<number, () => { decompress(d: Buffer): Promise<Buffer> }>>)[
    codec
  ];
  if (!make) {
    throw new UnsupportedCompressionError(
      `a fetched batch is compressed with codec ${codec}, which kafkajs has no codec for (register one in its CompressionCodecs)`,
    );
  }
  return make().decompress(data);
};

/** The decoded response in the shape kafkajs's Fetch `parse` and Broker#fetch read (throttle fields by version). */
async function decodeForKafkajs(version: number, raw: Buffer) {
  const decoded = await decodeFetchResponse(version, raw, decompressWithKafkajs);
  const throttle =
    version >= 8
      ? { throttleTime: 0, clientSideThrottleTime: decoded.throttleTimeMs }
      : { throttleTime: decoded.throttleTimeMs };
  return { ...throttle, errorCode: decoded.errorCode, responses: decoded.responses };
}

/**
 * `broker.fetch(args)` with the response decoded by ../protocol/fetch-response.ts for the versions it reads
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
          response: { ...built.response, decode: (raw: Buffer) => decodeForKafkajs(version, raw) },
        };
      };
    },
  });
  return brokerFetch.call(view, args);
}

/**
 * One Fetch request to `broker` with read_committed isolation; records of aborted
 * transactions and control records are dropped (see committed-records.ts).
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
  // Decoded by decodeForKafkajs: the protocol folder's own partitions under kafkajs's names.
  return committedPartitions(responses as unknown as DecodedFetchResponse["responses"], request.partitions);
}
