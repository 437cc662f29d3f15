// Kafka's default partitioner (src/protocol/partitioner.ts) without a broker: murmur2 as Kafka's
// Java client computes it (the values of its own UtilsTest), and the same partition as
// kafkajs's public DefaultPartitioner for every key, so one key lands in one partition
// whichever adapter wrote it.
import kafkajs from "kafkajs";
import { describe, expect, it } from "vitest";
import { DefaultPartitioner, murmur2 } from "../../src/protocol/partitioner.ts";

describe("the default partitioner", () => {
  it("murmur2 gives Kafka's Java values", () => {
    expect(murmur2(Buffer.from("21"))).toBe(-973932308);
    expect(murmur2(Buffer.from("foobar"))).toBe(-790332482);
    expect(murmur2(Buffer.from("a-little-bit-long-string"))).toBe(-985981536);
    expect(murmur2(Buffer.from("a-little-bit-longer-string"))).toBe(-1486304829);
    expect(murmur2(Buffer.from("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"))).toBe(-58897971);
    expect(murmur2(Buffer.from("abc"))).toBe(479470107);
  });

  it("places every key where kafkajs's DefaultPartitioner does; keyless messages go round-robin", () => {
    const theirs = kafkajs.Partitioners.DefaultPartitioner();
    const ours = new DefaultPartitioner();
    for (const partitions of [1, 3, 7, 64]) {
      const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({
        partitionId,
        leader: 0,
        partitionErrorCode: 0,
        replicas: [0],
        isr: [0],
      }));
      for (let i = 0; i < 500; i++) {
        const key =
          i % 3 === 0 ? `key-${i}` : i % 3 === 1 ? `é-${i}-日本` : Buffer.from([i & 255, (i * 7) & 255, 0, 1]);
        const expected = theirs({ topic: "t", partitionMetadata, message: { key, value: null } });
        expect(ours.partition("t", key, partitions)).toBe(expected);
      }
    }
    expect(Array.from({ length: 6 }, () => ours.partition("keyless", null, 3))).toEqual([0, 1, 2, 0, 1, 2]);
  });
});
