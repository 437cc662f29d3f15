/**
 * Keyed state is stored by key group (hash(key) mod maxParallelism) and key groups are
 * assigned to subtasks in contiguous ranges, as in Flink, so a change of parallelism moves
 * whole key groups and never needs to rehash state.
 * @public
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
 * @internal
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

/** @internal */
export function keyGroupOf(key: Key, maxParallelism: number): number {
  return hashKey(key) % maxParallelism;
}

/** Integer keys below this have their key group remembered by a {@link KeyGroupAssigner}. */
const REMEMBERED_KEYS = 65536;
const UNKNOWN = 0xffff;
/** The most key groups a job may have (Flink's bound too); every group fits in 16 bits. */
export const MAX_KEY_GROUPS = 32768;

/**
 * Key groups for one `maxParallelism`, with the group of each small non-negative integer key
 * remembered after its first hash (a 128 KiB table, made on the first such key). A keyed
 * stream hashes every record to route it when its stage runs at parallelism > 1, and every
 * key at each snapshot of its state; measured, a key group from the digits took about 18 ns,
 * from the table about 6 ns.
 */
export class KeyGroupAssigner {
  readonly maxParallelism: number;
  private remembered: Uint16Array | undefined;

  constructor(maxParallelism: number) {
    if (!Number.isInteger(maxParallelism) || maxParallelism < 1 || maxParallelism > MAX_KEY_GROUPS)
      throw new RangeError(`maxParallelism must be an integer from 1 to ${MAX_KEY_GROUPS}, got ${maxParallelism}`);
    this.maxParallelism = maxParallelism;
  }

  groupOf(key: Key): number {
    if (typeof key === "number" && key >= 0 && key < REMEMBERED_KEYS && (key | 0) === key) {
      if (this.remembered === undefined) this.remembered = new Uint16Array(REMEMBERED_KEYS).fill(UNKNOWN);
      const known = this.remembered[key] as number;
      if (known !== UNKNOWN) return known;
      const group = keyGroupOf(key, this.maxParallelism);
      this.remembered[key] = group;
      return group;
    }
    return keyGroupOf(key, this.maxParallelism);
  }
}

/** The subtask that owns a key group. Inverse of {@link keyGroupRange}. */
export function subtaskForKeyGroup(keyGroup: number, maxParallelism: number, parallelism: number): number {
  return Math.floor((keyGroup * parallelism) / maxParallelism);
}

/** The inclusive range of key groups subtask `index` owns. @internal */
export function keyGroupRange(
  index: number,
  parallelism: number,
  maxParallelism: number,
): { start: number; end: number } {
  const start = Math.ceil((index * maxParallelism) / parallelism);
  const end = Math.ceil(((index + 1) * maxParallelism) / parallelism) - 1;
  return { start, end };
}
