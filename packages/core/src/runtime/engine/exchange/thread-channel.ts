/**
 * A channel between two subtasks on different worker threads: the sending half stands where a
 * local Channel's producer would, the receiving half fills a local Channel that the consuming
 * subtask's gate reads. Records cross a batch per message, their values encoded by the
 * stage's codec into a buffer that is transferred; barriers, watermarks and the end travel
 * on the same port, so their order among batches is kept and alignment is unchanged.
 *
 * Backpressure holds as within a thread: the sender starts with `capacity` credits, spends
 * one a message and waits when none is left; the receiver gives one back each time its
 * consumer takes an element. So no more than `capacity` elements are ever under way (I6).
 */
import type { MessagePort } from "node:worker_threads";
import { CancelledError } from "../../../errors.ts";
import type { Batch, RecordPosition, StreamElement } from "../../../records.ts";
import { Channel, type OutputChannel } from "../channel.ts";
import { type ExchangeCodec, smallInteger } from "./exchange-codec.ts";

type Element = StreamElement<unknown>;

/** Positions of a batch by runs of one source and split, offsets in one array. */
interface EncodedPositions {
  readonly runs: Array<[source: string, split: string, count: number]>;
  readonly offsets: Float64Array | Array<number | string>;
}

/** What crosses the port. Small, plain objects: the batch's bulk is in transferred buffers. */
export type WireMessage =
  | {
      readonly kind: "batch";
      readonly values: Uint8Array;
      readonly positions: EncodedPositions;
      readonly timestamps?: Float64Array;
    }
  | { readonly kind: "barrier"; readonly checkpointId: number }
  | { readonly kind: "watermark"; readonly timestamp: number }
  | { readonly kind: "end" }
  | { readonly kind: "credit" };

function encodePositions(positions: readonly RecordPosition[]): EncodedPositions {
  const runs: EncodedPositions["runs"] = [];
  let numeric = true;
  for (const p of positions) {
    const last = runs[runs.length - 1];
    if (last && last[0] === p.source && last[1] === p.split) last[2]++;
    else runs.push([p.source, p.split, 1]);
    if (typeof p.offset !== "number") numeric = false;
  }
  const offsets = numeric ? new Float64Array(positions.length) : new Array<number | string>(positions.length);
  for (let i = 0; i < positions.length; i++) offsets[i] = (positions[i] as RecordPosition).offset as number;
  return { runs, offsets };
}

function decodePositions({ runs, offsets }: EncodedPositions): RecordPosition[] {
  const positions = new Array<RecordPosition>(offsets.length);
  let i = 0;
  for (const [source, split, count] of runs) {
    for (let end = i + count; i < end; i++)
      positions[i] = { source, split, offset: smallInteger(offsets[i] as number | string) };
  }
  return positions;
}

/** Encodes an element for the port, with the buffers to transfer. */
export function toWire(
  element: Element,
  codec: ExchangeCodec<unknown>,
): { message: WireMessage; transfer: ArrayBuffer[] } {
  if (element.kind !== "batch") return { message: element, transfer: [] };
  const { values, positions, timestamps } = element.batch;
  const encodedValues = codec.encode(values);
  const encodedPositions = encodePositions(positions);
  const transfer = [encodedValues.buffer as ArrayBuffer];
  if (encodedPositions.offsets instanceof Float64Array) transfer.push(encodedPositions.offsets.buffer as ArrayBuffer);
  if (timestamps === undefined) {
    return { message: { kind: "batch", values: encodedValues, positions: encodedPositions }, transfer };
  }
  const encodedTimestamps = Float64Array.from(timestamps);
  transfer.push(encodedTimestamps.buffer as ArrayBuffer);
  return {
    message: { kind: "batch", values: encodedValues, positions: encodedPositions, timestamps: encodedTimestamps },
    transfer,
  };
}

export function fromWire(message: Exclude<WireMessage, { kind: "credit" }>, codec: ExchangeCodec<unknown>): Element {
  if (message.kind !== "batch") return message;
  const batch: Batch<unknown> = {
    values: codec.decode(message.values),
    positions: decodePositions(message.positions),
    timestamps: message.timestamps ? Array.from(message.timestamps) : undefined,
  };
  return { kind: "batch", batch };
}

/** The producing half: `push` as a local Channel's, waiting only when the credits are spent. */
export class ThreadChannelSender implements OutputChannel {
  private readonly port: MessagePort;
  private readonly codec: ExchangeCodec<unknown>;
  private credits: number;
  private waiter: { resolve: () => void; reject: (e: unknown) => void } | undefined;
  private cancelled: unknown;

  constructor(port: MessagePort, codec: ExchangeCodec<unknown>, capacity: number) {
    this.port = port;
    this.codec = codec;
    this.credits = capacity;
    port.on("message", (message: WireMessage) => {
      if (message.kind !== "credit") return;
      this.credits++;
      const waiter = this.waiter;
      this.waiter = undefined;
      waiter?.resolve();
    });
  }

  push(element: Element): Promise<void> | undefined {
    if (this.cancelled !== undefined) throw this.cancelled;
    const { message, transfer } = toWire(element, this.codec);
    this.port.postMessage(message, transfer);
    this.credits--;
    if (this.credits > 0) return undefined;
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  cancel(reason: unknown = new CancelledError()): void {
    this.cancelled = reason;
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.reject(reason);
  }

  close(): void {
    this.port.close();
  }
}

/** The consuming half: a local Channel, filled from the port, that gives a credit back per element taken. */
export class ThreadChannelReceiver {
  readonly channel: Channel<Element>;
  private readonly port: MessagePort;

  constructor(port: MessagePort, codec: ExchangeCodec<unknown>, capacity: number) {
    this.port = port;
    this.channel = new Channel<Element>(capacity);
    this.channel.onTaken = () => port.postMessage({ kind: "credit" } satisfies WireMessage);
    port.on("message", (message: WireMessage) => {
      if (message.kind === "credit") return;
      // The sender holds no more than `capacity` credits, so this never overfills: the
      // promise a full channel returns is the sender's to wait for, through the credits.
      void this.channel.push(fromWire(message, codec));
    });
  }

  close(): void {
    this.port.close();
  }
}
