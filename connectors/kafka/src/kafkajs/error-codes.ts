/**
 * Kafka protocol error codes as this connector meets them: a response carries a numeric
 * code, kafkajs turns it into an error whose `type` names it (INVALID_PRODUCER_EPOCH,
 * OFFSET_OUT_OF_RANGE, …). Callers classify errors by that `type` (see ../kafka-errors.ts),
 * never by number, so only "no error" is named here.
 */
import { internals } from "./load.ts";

/** The code of a response or partition without an error. */
export const NO_ERROR = 0;

/** kafkajs's error for a protocol error code (its `type` names it, its `retriable` says if a retry may help). */
export function protocolError(code: number): Error {
  return internals.createErrorFromCode(code);
}
