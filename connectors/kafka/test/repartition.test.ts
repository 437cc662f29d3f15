// A keyBy across shards through a Kafka repartition topic (docs/design.md §2, Groups), on the
// real broker: the group before the keyBy writes the topic, the group after reads it as two
// shards, and every record reaches the shard that owns its key exactly once.

import {
  ConfigurationError,
  FIRST_GROUP,
  GeneratorSource,
  StreamJob,
  silentLogger,
  TumblingEventTimeWindows,
  type WindowResult,
} from "@exactly/core";
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import { describe, expect, it } from "vitest";
import { MemorySink, MemoryStore, tempDir } from "../../../packages/core/test/helpers.ts";
import { kafkaRepartition } from "../src/index.ts";
import { openKafkaConnection } from "../src/open-connection.ts";
import { partitionEnds } from "./helpers.ts";

interface Click {
  readonly id: number;
  readonly user: string;
}

interface TimedClick extends Click {
  /** Event time, ms. */
  readonly at: number;
}

interface Counted {
  readonly id: number;
  readonly user: string;
  /** The user's running count, in the keyed state of the shard that owns the user. */
  readonly nth: number;
  readonly shard: number;
}

const RECORDS = 3000;
const USERS = 37;

/** Clicks by id (the input's order), summed per user after the keyBy across the topic. */
function clicksJob(options: {
  readonly topic: string;
  readonly storage: string;
  readonly store: MemoryStore;
  readonly group: string;
  readonly shard?: { index: number; count: number };
}): StreamJob {
  const job = new StreamJob({
    name: "clicks",
    checkpoint: { storage: options.storage, intervalMs: 100 },
    logger: silentLogger,
    group: options.group,
    ...(options.shard ? { shard: options.shard, lease: { durationMs: 2000 } } : {}),
  });
  const shard = options.shard?.index ?? 0;
  job
    .fromSource(
      new GeneratorSource<Click>({ count: RECORDS, generate: (i) => ({ id: i, user: `user-${(i * 7) % USERS}` }) }),
    )
    .keyBy((c) => c.user, {
      across: kafkaRepartition<Click>({
        brokers: kafkaBrokers(),
        topic: options.topic,
        partitions: 4,
        retainedCheckpoints: 2,
        purgeIntervalMs: 0,
      }),
    })
    .process<Counted, number>({
      processElement: (c, ctx) => {
        const nth = (ctx.state.value() ?? 0) + 1;
        ctx.state.update(nth);
        ctx.emit({ ...c, nth, shard });
      },
    })
    .sinkTo(() => new MemorySink<Counted>(options.store), { name: "counts" });
  return job;
}

async function until(what: string, condition: () => boolean, limitMs = 90_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Every committed record of `topic` with its key and partition, once no transaction is open on it. */
async function readKeyed(topic: string, partitions: number) {
  const ends = await partitionEnds(topic, partitions);
  for (const end of ends) expect(end.lastStableOffset, `partition ${end.partition}`).toBe(end.highWatermark);
  const reader = openKafkaConnection({ brokers: kafkaBrokers() }, { readCommitted: true });
  await reader.connect();
  const out: Array<{ partition: number; key: Buffer | null; value: Buffer | null }> = [];
  let markers = 0;
  try {
    for (const { partition, highWatermark } of ends) {
      let offset = 0;
      while (offset < Number(highWatermark)) {
        const [fetched] = await reader.fetchCommitted({
          maxWaitMs: 0,
          maxBytes: 1 << 20,
          partitions: [{ topic, partition, fetchOffset: offset, maxBytes: 1 << 20 }],
        });
        // Watermark markers are for exactly's readers: other tools skip them by their header.
        for (const r of fetched?.records ?? []) {
          if (r.headers["exactly-watermark"] === undefined) out.push({ partition, key: r.key, value: r.value });
          else markers++;
        }
        if (fetched?.nextOffset !== undefined) offset = Number(fetched.nextOffset);
      }
    }
  } finally {
    await reader.close();
  }
  // Each writer marks every partition at every checkpoint.
  expect(markers).toBeGreaterThanOrEqual(partitions);
  return out;
}

async function error(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => new Error("expected a rejection"),
    (e: unknown) => e,
  );
}

describe("keyBy across shards through a Kafka repartition topic", () => {
  it("the group before writes every record once into its key group's partition; two shards after read them, each its own keys", async () => {
    const topic = uniqueName("repartition");
    const storage = await tempDir();
    const upstreamStore = new MemoryStore();
    const result = await clicksJob({ topic, storage, store: upstreamStore, group: FIRST_GROUP }).execute();
    expect(result.restarts).toBe(0);

    // The topic as any read_committed reader sees it: every id once, keyed by user.
    const written = await readKeyed(topic, 4);
    expect(written.map((r) => (JSON.parse(String(r.value)) as Click).id).sort((a, b) => a - b)).toEqual(
      Array.from({ length: RECORDS }, (_v, i) => i),
    );
    const partitionsOfUser = new Map<string, Set<number>>();
    for (const r of written) {
      const user = String(r.key);
      partitionsOfUser.set(user, (partitionsOfUser.get(user) ?? new Set()).add(r.partition));
    }
    expect(partitionsOfUser.size).toBe(USERS);
    for (const [user, partitions] of partitionsOfUser) expect(partitions.size, user).toBe(1);

    // Downstream as two shards, side by side, each with its own lease and checkpoints.
    const store = new MemoryStore();
    const shards = [0, 1].map((index) =>
      clicksJob({ topic, storage, store, group: "downstream", shard: { index, count: 2 } }).start(),
    );
    try {
      await until(`${RECORDS} records are committed downstream`, () => store.committed.length >= RECORDS);
    } finally {
      await Promise.all(shards.map((s) => s.stop()));
    }
    const counted = store.committed as Counted[];
    expect(counted.map((c) => c.id).sort((a, b) => a - b)).toEqual(Array.from({ length: RECORDS }, (_v, i) => i));
    // Each user counted by one shard only, from 1 up to its number of clicks with no gap.
    const byUser = new Map<string, Counted[]>();
    for (const c of counted) byUser.set(c.user, [...(byUser.get(c.user) ?? []), c]);
    for (const [user, clicks] of byUser) {
      expect(new Set(clicks.map((c) => c.shard)).size, user).toBe(1);
      expect(clicks.map((c) => c.nth).sort((a, b) => a - b)).toEqual(clicks.map((_c, i) => i + 1));
    }
    expect(new Set(counted.map((c) => c.shard))).toEqual(new Set([0, 1]));

    // What both shards' two newest checkpoints are past is deleted (DeleteRecords), and the
    // shards start again from their checkpoints without missing anything.
    const admin = openKafkaConnection({ brokers: kafkaBrokers() }, { readCommitted: true });
    await admin.connect();
    try {
      const starts = await admin.listOffsets(
        [0, 1, 2, 3].map((partition) => ({ topic, partition })),
        "earliest",
      );
      expect(starts.filter((s) => s.offset > 0).length, JSON.stringify(starts)).toBeGreaterThan(0);
    } finally {
      await admin.close();
    }
    const again = new MemoryStore();
    const restarted = [0, 1].map((index) =>
      clicksJob({ topic, storage, store: again, group: "downstream", shard: { index, count: 2 } }).start(),
    );
    const results = await new Promise<Awaited<ReturnType<(typeof restarted)[0]["stop"]>>[]>((resolve, reject) => {
      setTimeout(() => Promise.all(restarted.map((s) => s.stop())).then(resolve, reject), 1500);
    });
    for (const r of results) expect(r.restoredCheckpointId).toBeGreaterThan(0);
    expect(again.committed).toEqual([]);
  });

  it("carries event time across: windows after the topic equal the same job's in one process", async () => {
    const topic = uniqueName("repartition-windows");
    const storage = await tempDir();
    const clicks = new GeneratorSource<TimedClick>({
      count: RECORDS,
      // Out of order within 300 ms, over 6 s of event time, in 3 windows of 2 s.
      generate: (i) => ({ id: i, user: `user-${(i * 7) % USERS}`, at: i * 2 + ((i * 37) % 300) }),
    });
    const windowed = (job: StreamJob, across: boolean, store: MemoryStore) => {
      const input = job.fromSource(clicks, { watermarks: { timestampOf: (c) => c.at, maxOutOfOrdernessMs: 300 } });
      const keyed = across
        ? input.keyBy((c) => c.user, {
            across: kafkaRepartition<TimedClick>({ brokers: kafkaBrokers(), topic, partitions: 4 }),
          })
        : input.keyBy((c) => c.user);
      keyed
        .window(TumblingEventTimeWindows.of(2000))
        .aggregate({ createAccumulator: () => 0, add: (_c, n: number) => n + 1, getResult: (n) => n })
        .sinkTo(() => new MemorySink<WindowResult<string, number>>(store), { name: "windows" });
      return job;
    };
    const options = (group?: string) => ({
      name: "windows",
      checkpoint: { storage, intervalMs: 100 },
      logger: silentLogger,
      ...(group ? { group } : {}),
    });

    const alone = new MemoryStore();
    const own = { ...options(), checkpoint: { storage: await tempDir(), intervalMs: 100 } };
    await windowed(new StreamJob(own), false, alone).execute();
    const expected = (alone.committed as WindowResult<string, number>[]).map((w) => `${w.key}@${w.start}=${w.value}`);
    expect(expected.length).toBeGreaterThan(USERS * 2);

    await windowed(new StreamJob(options(FIRST_GROUP)), true, new MemoryStore()).execute();
    const after = new MemoryStore();
    const downstream = windowed(new StreamJob(options("downstream")), true, after).start();
    try {
      await until(`${expected.length} windows fire after the topic`, () => after.committed.length >= expected.length);
    } finally {
      await downstream.stop();
    }
    const got = (after.committed as WindowResult<string, number>[]).map((w) => `${w.key}@${w.start}=${w.value}`);
    expect(got.sort()).toEqual(expected.sort());
  });

  it("refuses a topic that exists with another partition count, or compacted, naming topic", async () => {
    const storage = await tempDir();
    const store = new MemoryStore();
    const admin = openKafkaConnection({ brokers: kafkaBrokers() });
    await admin.connect();
    try {
      const narrow = uniqueName("repartition-narrow");
      await admin.ensureTopic({ topic: narrow, partitions: 2, configs: {} });
      const refused = await error(clicksJob({ topic: narrow, storage, store, group: FIRST_GROUP }).execute());
      expect(refused).toBeInstanceOf(ConfigurationError);
      expect((refused as ConfigurationError).setting).toBe("topic");
      expect(String(refused)).toMatch(/has 2 partitions, and the job asks for 4/);

      const compacted = uniqueName("repartition-compacted");
      await admin.ensureTopic({ topic: compacted, partitions: 4, configs: { "cleanup.policy": "compact" } });
      const refusedToo = await error(
        clicksJob({ topic: compacted, storage: await tempDir(), store, group: FIRST_GROUP }).execute(),
      );
      expect((refusedToo as ConfigurationError).setting).toBe("topic");
      expect(String(refusedToo)).toMatch(/cleanup\.policy=compact/);
    } finally {
      await admin.close();
    }
    expect(store.committed).toEqual([]);
  });
});
