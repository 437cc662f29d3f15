import { randomUUID } from "node:crypto";

/**
 * A name no other test or run uses, `<label><separator><8 hex digits>`: for topics, tables,
 * key prefixes, transactional ids and prepared transactions, so tests never share server state.
 */
export function uniqueName(label: string, separator = "-"): string {
  return `${label}${separator}${randomUUID().slice(0, 8)}`;
}

/** How often each numeric id occurs among JSON values or lines `{ "id": n, … }`; blank lines are skipped. */
export function idCounts(values: Iterable<string>): Map<number, number> {
  const counts = new Map<number, number>();
  for (const value of values) {
    if (!value) continue;
    const { id } = JSON.parse(value) as { id: number };
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}
