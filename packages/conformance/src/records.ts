import type { ConformanceRecord } from "./definition.ts";

/**
 * Keys of the suite's records: record `id` upserts key `key-(id mod KEY_SPACE)`. A multiple
 * of the source's lanes, so all updates of a key come from one lane, in stream order, and
 * a key is updated many times in a run: a replay that moves it back is visible.
 */
export const KEY_SPACE = 256;

/** The key record `id` updates (idempotent sinks key by it). */
export function keyOf(id: number): string {
  return `key-${id % KEY_SPACE}`;
}

/** The suite's record `id`: deterministic, so a replay produces the same record again. */
export function conformanceRecord(id: number): ConformanceRecord {
  return { id, key: keyOf(id), version: Math.floor(id / KEY_SPACE), payload: `record-${id}` };
}
