/**
 * kafkajs's message producer with its Produce requests' record batches encoded by
 * ../protocol/record-batch.ts, one buffer per request: everything else of the send is kafkajs's own —
 * partitioning, AddPartitionsToTxn, the idempotence sequence numbers (the message producer
 * takes and returns them around each request), the version negotiated with the broker, the
 * response and its errors, retries.
 *
 * The message producer reaches brokers only through `cluster.findBroker` and sends through
 * `broker.produce` (load checks both in its source); {@link producingCluster} hands it the same
 * cluster and brokers, except that a broker's `produce` is {@link produce} below. The shared
 * cluster and its brokers are not changed: the source, the transactions' own requests and any
 * kafkajs producer of the user's keep kafkajs's encoding.
 */
import { readFileSync } from "node:fs";
import type { Message } from "kafkajs";
import { encodeProduceRequestBody, type PartitionRecords } from "../protocol/record-batch.ts";
import {
  expectFunction,
  expectFunctions,
  internals,
  KafkajsInternalsError,
  requireInternal,
  resolveInternal,
} from "./load.ts";
import type { InternalBroker, InternalCluster, ProtocolRequest, ProtocolResponse } from "./shapes.ts";
import { withMethods } from "./views.ts";

/** What kafkajs's sendMessages passes to `broker.produce`. */
interface ProduceArguments {
  topicData: Array<{
    topic: string;
    partitions: Array<{ partition: number; messages: Message[]; firstSequence?: number }>;
  }>;
  transactionalId?: string;
  producerId?: string | number;
  producerEpoch?: number;
  acks?: number;
  timeout?: number;
  compression?: number;
}

type ProduceRequestFactory = (request: Required<ProduceArguments>) => {
  request: ProtocolRequest & { expectResponse?: () => boolean };
  response: ProtocolResponse<unknown>;
};

interface ProducingBroker extends InternalBroker {
  lookupRequest(apiKey: number, definition: unknown): ProduceRequestFactory;
  produce(args: ProduceArguments): Promise<unknown>;
}

/** The Produce versions whose body record-batch.ts writes: kafkajs 2.2.4 sends v3–v7 with one body, record batches of magic 2. */
const FIRST_VERSION = 3;
const LAST_VERSION = 7;
const NO_COMPRESSION = 0;
/** kafkajs's Broker#produce defaults. */
const DEFAULT_ACKS = -1;
const DEFAULT_TIMEOUT_MS = 30_000;

interface ProduceInternals {
  produceApiKey: number;
  produceDefinition: unknown;
  sendRequest: symbol;
}

function loadProduceInternals(): ProduceInternals {
  const sendMessages = readFileSync(resolveInternal("src/producer/sendMessages.js"), "utf8");
  if (!sendMessages.includes("cluster.findBroker(") || !sendMessages.includes("broker.produce(")) {
    throw new KafkajsInternalsError(
      "producer/sendMessages.js no longer sends through cluster.findBroker and broker.produce",
    );
  }
  const apiKeys = requireInternal("src/protocol/requests/apiKeys.js") as { Produce?: unknown };
  if (apiKeys.Produce !== 0) throw new KafkajsInternalsError("apiKeys.Produce is not 0");
  const { requests } = requireInternal("src/protocol/requests/index.js") as { requests?: { Produce?: unknown } };
  expectFunctions("requests.Produce", requests?.Produce, ["protocol"]);
  const Broker = expectFunction("src/broker", requireInternal("src/broker/index.js"));
  expectFunctions("Broker.prototype", Broker.prototype, ["produce"]);
  const sendRequest = Object.getOwnPropertySymbols(Broker.prototype).find(
    (s) => s.description === "private:Broker:sendRequest",
  );
  if (sendRequest === undefined) throw new KafkajsInternalsError("Broker has no private:Broker:sendRequest");
  return { produceApiKey: 0, produceDefinition: requests?.Produce, sendRequest };
}

/** Loaded at import, like load.ts's internals: a kafkajs of another shape fails at load. */
const produceInternals = loadProduceInternals();

/**
 * `broker.produce` with the body encoded in one buffer: kafkajs's request for the version it
 * negotiated with the broker (so its response decoding and error parsing), sent through the
 * broker's own request path, but with {@link encodeProduceRequestBody}'s bytes. A version or
 * compression this encoder does not write goes through kafkajs's encoding unchanged.
 */
async function produce(broker: ProducingBroker, args: ProduceArguments): Promise<unknown> {
  const request = {
    topicData: args.topicData,
    transactionalId: args.transactionalId as string,
    producerId: args.producerId ?? -1,
    producerEpoch: args.producerEpoch ?? 0,
    acks: args.acks ?? DEFAULT_ACKS,
    timeout: args.timeout ?? DEFAULT_TIMEOUT_MS,
    compression: args.compression ?? NO_COMPRESSION,
  };
  const built = broker.lookupRequest(produceInternals.produceApiKey, produceInternals.produceDefinition)(request);
  const version = built.request.apiVersion;
  if (request.compression !== NO_COMPRESSION || version < FIRST_VERSION || version > LAST_VERSION) {
    return broker.produce(args);
  }
  const encode = async () => {
    const body = encodeProduceRequestBody({
      transactionalId: request.transactionalId ?? null,
      acks: request.acks,
      timeout: request.timeout,
      producerId: request.producerId,
      producerEpoch: request.producerEpoch,
      topicData: request.topicData.map(({ topic, partitions }) => ({
        topic,
        partitions: partitions.map(
          ({ partition, messages, firstSequence }): PartitionRecords => ({
            partition,
            messages,
            firstSequence: firstSequence ?? 0,
          }),
        ),
      })),
    });
    return new internals.Encoder().writeBuffer(body);
  };
  const send = (broker as unknown as Record<symbol, (protocol: unknown) => Promise<unknown>>)[
    produceInternals.sendRequest
  ] as (protocol: unknown) => Promise<unknown>;
  return send.call(broker, { request: { ...built.request, encode }, response: built.response });
}

/** Makes one Produce request (`request`) for `broker`: where the caller can hold a request back or watch it fail. */
export type AroundProduce = (broker: InternalBroker, request: () => Promise<unknown>) => Promise<unknown>;

/**
 * `cluster` as the message producer should see it: `findBroker` answers the same broker with
 * {@link produce} as its `produce`, made through `around` (one such view per broker, so the
 * producer's per-broker bookkeeping sees one broker, as before).
 */
export function producingCluster(cluster: InternalCluster, around: AroundProduce): InternalCluster {
  const views = new WeakMap<InternalBroker, InternalBroker>();
  const viewOf = (broker: InternalBroker): InternalBroker => {
    let view = views.get(broker);
    if (!view) {
      const producing = broker as ProducingBroker;
      expectFunctions("Broker", producing, ["lookupRequest", "produce"]);
      const produceThrough = (args: ProduceArguments) => around(view as InternalBroker, () => produce(producing, args));
      view = withMethods(broker, { produce: produceThrough });
      views.set(broker, view);
    }
    return view;
  };
  return withMethods(cluster, {
    findBroker: async (request: { nodeId: number | string }) => viewOf(await cluster.findBroker(request)),
  });
}
