/**
 * Kafka's default partitioner, client-neutral: a message with a key goes to
 * `murmur2(key) & 0x7fffffff` modulo the partition count, as Kafka's Java producer (and
 * most other clients) place it, so one key lands in one partition whichever client
 * wrote it; a message without a key goes round-robin. Keys are hashed as their UTF-8 bytes.
 */

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/** Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2) of `data`, as a signed 32-bit int. */
export function murmur2(data: Buffer): number {
  const length = data.length;
  let h = (SEED ^ length) | 0;
  const blocks = length & ~3;
  for (let i = 0; i < blocks; i += 4) {
    let k =
      (data[i] as number) |
      ((data[i + 1] as number) << 8) |
      ((data[i + 2] as number) << 16) |
      ((data[i + 3] as number) << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  switch (length & 3) {
    // biome-ignore lint/suspicious/noFallthroughSwitchClause: murmur2 takes the tail bytes by falling through
    case 3:
      h ^= (data[blocks + 2] as number) << 16;
    // biome-ignore lint/suspicious/noFallthroughSwitchClause: as above
    case 2:
      h ^= (data[blocks + 1] as number) << 8;
    case 1:
      h ^= data[blocks] as number;
      h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** Places messages in partitions: by key, or round-robin per topic for those without one. */
export class DefaultPartitioner {
  private readonly next = new Map<string, number>();

  partition(topic: string, key: Buffer | string | null | undefined, partitions: number): number {
    if (key === null || key === undefined) {
      const n = this.next.get(topic) ?? 0;
      this.next.set(topic, (n + 1) % 0x7fffffff);
      return n % partitions;
    }
    const bytes = typeof key === "string" ? Buffer.from(key, "utf8") : key;
    return (murmur2(bytes) & 0x7fffffff) % partitions;
  }
}
