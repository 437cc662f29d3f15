/**
 * The write-ahead sink's log lines, in checkpoint storage. A record is logged as the COPY line
 * it becomes (already encoded, so a record that cannot be written fails when it arrives) and
 * its source position (so a refusal at commit still names it):
 *
 *   `R<field>\t<field>…\t<source>\t<split>\t<n|s><offset>`, every part in COPY's escaping;
 *
 * a record set aside for the dead-letter table is `D<json>`. At commit an appended row's line
 * goes to COPY as it is; an upserted row's fields are split out again.
 */
import type { RecordPosition } from "@exactly/core";
import { copyField, parseCopyLine } from "./column-types.ts";
import type { DeadLetter } from "./dead-letters.ts";

export type LoggedRow =
  | { readonly line: string; readonly position: RecordPosition }
  | { readonly deadLetter: DeadLetter };

/** The log line of a row, given as its COPY line (`CompiledMapping.encodeLine`). */
export function logRow(line: string, position: RecordPosition): string {
  const offset = typeof position.offset === "number" ? `n${position.offset}` : `s${position.offset}`;
  return `R${line}\t${copyField(position.source)}\t${copyField(position.split)}\t${copyField(offset)}`;
}

export function logDeadLetter(letter: DeadLetter): string {
  return `D${JSON.stringify(letter)}`;
}

const field = (text: string): string => (text.includes("\\") ? (parseCopyLine(text)[0] as string) : text);

export function readLogged(text: string): LoggedRow {
  if (text.startsWith("D")) return { deadLetter: JSON.parse(text.slice(1)) as DeadLetter };
  if (!text.startsWith("R")) throw new Error(`not a line of the Postgres write-ahead log: ${text.slice(0, 40)}`);
  // The position is the last three fields; a field's own tabs are escaped.
  const t1 = text.lastIndexOf("\t");
  const t2 = text.lastIndexOf("\t", t1 - 1);
  const t3 = text.lastIndexOf("\t", t2 - 1);
  const offset = field(text.slice(t1 + 1));
  return {
    line: text.slice(1, t3),
    position: {
      source: field(text.slice(t3 + 1, t2)),
      split: field(text.slice(t2 + 1, t1)),
      offset: offset.startsWith("n") ? Number(offset.slice(1)) : offset.slice(1),
    },
  };
}
