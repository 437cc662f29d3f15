/**
 * The write-ahead sink's log line: one record's source position and its encoded operations,
 * as one flat JSON array, `[source, split, offset, n, command, key, …args, n, command, …]`,
 * where each `n` counts the operation's parts (command, key and arguments) after it. A flat
 * array of strings and numbers is what JSON encodes and parses fastest: no object and no
 * nested array per record, so a checkpoint's log is read back at a fraction of the cost.
 */
import type { RecordPosition } from "@exactly/core";
import type { EncodedOperation } from "./operations.ts";

/** One logged record, decoded: the flat array described above. */
export type LoggedOperations = readonly (string | number)[];

/** Where a line's first operation starts. */
export const FIRST_OPERATION = 3;

function flatten(position: RecordPosition, operations: readonly EncodedOperation[]): (string | number)[] {
  const line: (string | number)[] = [position.source, position.split, position.offset];
  for (const operation of operations) {
    line.push(operation.length);
    for (let i = 0; i < operation.length; i++) line.push(operation[i] as string | number);
  }
  return line;
}

export function encodeLoggedOperations(position: RecordPosition, operations: readonly EncodedOperation[]): string {
  return JSON.stringify(flatten(position, operations));
}

/**
 * A log line back as the flat array. A line of the earlier format, an object
 * `{"position": …, "operations": [[command, key, …args], …]}`, is read too, so a checkpoint
 * logged before an upgrade is applied after it.
 */
export function decodeLoggedOperations(line: string): LoggedOperations {
  const parsed = JSON.parse(line) as LoggedOperations | { position: RecordPosition; operations: EncodedOperation[] };
  if (Array.isArray(parsed)) return parsed;
  const earlier = parsed as { position: RecordPosition; operations: EncodedOperation[] };
  return flatten(earlier.position, earlier.operations);
}

/** The record's source position, for an error that names it. */
export function positionOf(logged: LoggedOperations): RecordPosition {
  return { source: String(logged[0]), split: String(logged[1]), offset: logged[2] as number | string };
}

/** How many operations a logged record holds. */
export function operationCount(logged: LoggedOperations): number {
  let count = 0;
  for (let at = FIRST_OPERATION; at < logged.length; at += 1 + (logged[at] as number)) count++;
  return count;
}
