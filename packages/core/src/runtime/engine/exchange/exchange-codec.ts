/**
 * How a stage's records cross between worker threads: a batch's values become one buffer,
 * which is transferred to the other thread (moved, not copied). A stage may declare its own
 * codec (Flink's TypeSerializer); the default suits plain JSON-like objects.
 */
import { deserialize, serialize } from "node:v8";

/**
 * How a stage's input crosses between worker threads, a batch at a time: {@link jsonExchangeCodec}
 * by default, {@link structuredExchangeCodec}, or one of your own.
 * @public
 */
export interface ExchangeCodec<T> {
  /** A name for errors and metrics. */
  readonly name: string;
  /** The values of one batch as bytes; the buffer is transferred, so it must not be reused. */
  encode(values: readonly T[]): Uint8Array;
  decode(bytes: Uint8Array): T[];
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * JSON text: what JSON.stringify keeps survives (no undefined fields, Dates as strings, no
 * Maps or BigInts). V8's JSON is the fastest general encoding of plain objects on this
 * runtime; see docs/design.md for the crossing cost measured against the others.
 * @public
 */
export const jsonExchangeCodec: ExchangeCodec<unknown> = {
  name: "json",
  encode: (values) => encoder.encode(JSON.stringify(values)),
  decode: (bytes) => JSON.parse(decoder.decode(bytes)) as unknown[],
};

/**
 * V8's structured-clone format (node:v8 serialize): keeps what postMessage keeps — Dates,
 * Maps, Sets, BigInts, typed arrays, undefined — at a higher cost than JSON for plain objects.
 * @public
 */
export const structuredExchangeCodec: ExchangeCodec<unknown> = {
  name: "structured",
  encode: (values) => serialize(values),
  decode: (bytes) => deserialize(bytes) as unknown[],
};

/**
 * A number read from a Float64Array is a double to V8, even when it is a whole number. Put
 * in an object of a shape the source also makes (a position, a record), it turns that field
 * into a boxed double for every object of the shape on this thread, the source's included:
 * an allocation more per field per record, everywhere. Whole numbers go back as small
 * integers. (Measured on the demo job on two workers: its keyed stage's state lookups and
 * keyBy split took twice the CPU before.) A codec that decodes numbers from a Float64Array
 * should pass them through it.
 * @public
 */
export function smallInteger<T>(value: T): T {
  if (typeof value !== "number") return value;
  const int = value | 0;
  return (int === value ? int : value) as T;
}
