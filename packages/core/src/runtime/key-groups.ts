/**
 * Keyed state is stored by key group (hash(key) mod maxParallelism) and key groups are
 * assigned to subtasks in contiguous ranges, as in Flink, so a change of parallelism moves
 * whole key groups and never needs to rehash state.
 */
export type Key = string | number;

/** 32-bit FNV-1a over the key's string form, then a murmur finalizer for spread. */
export function hashKey(key: Key): number {
  const s = typeof key === "number" ? `n${key}` : key;
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export function keyGroupOf(key: Key, maxParallelism: number): number {
  return hashKey(key) % maxParallelism;
}

/** The subtask that owns a key group. Inverse of {@link keyGroupRange}. */
export function subtaskForKeyGroup(keyGroup: number, maxParallelism: number, parallelism: number): number {
  return Math.floor((keyGroup * parallelism) / maxParallelism);
}

/** The inclusive range of key groups subtask `index` owns. */
export function keyGroupRange(
  index: number,
  parallelism: number,
  maxParallelism: number,
): { start: number; end: number } {
  const start = Math.ceil((index * maxParallelism) / parallelism);
  const end = Math.ceil(((index + 1) * maxParallelism) / parallelism) - 1;
  return { start, end };
}
