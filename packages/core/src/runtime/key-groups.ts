/**
 * Keyed state is stored by key group (hash(key) mod maxParallelism) and key groups are
 * assigned to subtasks in contiguous ranges, as in Flink, so a change of parallelism moves
 * whole key groups and never needs to rehash state.
 */
export type Key = string | number;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const CHAR_N = 0x6e;
const CHAR_MINUS = 0x2d;
const CHAR_0 = 0x30;
/** Digits of an integer key, least significant first (a key is hashed on one thread at a time). */
const digits = new Uint8Array(16);

/**
 * 32-bit FNV-1a over the key's string form (`n` and the number for a number), then a murmur
 * finalizer for spread. An integer key is hashed from its digits as they are computed, with
 * the same result as over `n${key}`: every record of a keyed stream is hashed, and making
 * that string was an allocation a record.
 */
export function hashKey(key: Key): number {
  let h = FNV_OFFSET;
  if (typeof key === "number" && Number.isSafeInteger(key)) {
    h = Math.imul(h ^ CHAR_N, FNV_PRIME);
    let rest = key;
    if (rest < 0) {
      h = Math.imul(h ^ CHAR_MINUS, FNV_PRIME);
      rest = -rest;
    }
    let count = 0;
    do {
      const digit = rest % 10;
      digits[count++] = digit;
      rest = (rest - digit) / 10;
    } while (rest > 0);
    while (count > 0) h = Math.imul(h ^ (CHAR_0 + (digits[--count] as number)), FNV_PRIME);
  } else {
    const s = typeof key === "number" ? `n${key}` : key;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), FNV_PRIME);
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
