// I9 for the Redis sinks, on a single server and on the Cluster: in a sharded job an owner
// superseded by a newer epoch has its next write-ahead commit or upsert flush refused with
// ShardFencedError inside the very script that would write, nothing of it visible; an owner
// older than the fence refuses to open; and a sink without ownership writes no fence at all.
// Redis runs one script at a time, so an old owner's call runs wholly before the raise or is
// refused: there is no window between a check and a write to race in.

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileSystemCheckpointStorage, ShardFencedError, type Sink, type SinkContext } from "@exactly/core";
import { redisClusterNodes, redisUrl } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import { sinkContext } from "@exactly/testkit/sink-context";
import { afterAll, describe, expect, it } from "vitest";
import {
  connectRedis,
  RedisAtLeastOnceSink,
  type RedisOperation,
  RedisUpsertSink,
  RedisWriteAheadSink,
} from "../src/index.ts";
import { deleteUnder, keysUnder, type RedisTarget, rejection, withRedis } from "./helpers.ts";

interface Row {
  id: number;
  key: string;
}

const TARGETS: ReadonlyArray<[string, () => RedisTarget]> = [
  ["single server", () => redisUrl()],
  ["Cluster", () => ({ clusterNodes: redisClusterNodes() })],
];

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup();
});

/** A fresh prefix, deleted after the file; `tagged` gives it a hash tag (the write-ahead sink needs one on a Cluster). */
function prefixFor(target: RedisTarget, label: string, tagged: boolean): string {
  const name = uniqueName(`fence-${label}`);
  const prefix = tagged ? `{${name}}:` : `${name}:`;
  cleanups.push(() => deleteUnder(target, prefix));
  return prefix;
}

async function storage(): Promise<SinkContext["storage"]> {
  return new FileSystemCheckpointStorage(await mkdtemp(join(tmpdir(), "exactly-redis-fence-")));
}

function owned(epoch: number, shared: SinkContext["storage"], overrides: Partial<SinkContext> = {}): SinkContext {
  return sinkContext("fenced", { storage: shared, ownership: { shard: { index: 0, count: 1 }, epoch }, ...overrides });
}

function rows(ids: number[]) {
  return {
    values: ids.map((id): Row => ({ id, key: `k${id}` })),
    positions: ids.map((offset) => ({ source: "s", split: "0", offset })),
    timestamps: undefined,
  };
}

const operations = (r: Row): RedisOperation[] => [
  { op: "incrBy", key: "total", by: r.id },
  { op: "rPush", key: "ids", values: [r.id] },
];

function writeAhead(target: RedisTarget, prefix: string): Sink<Row> {
  return new RedisWriteAheadSink<Row>({ connection: target, keyPrefix: prefix, operations, name: "wal" });
}

/** The at-least-once sink, setting each record's key to its id. */
function atLeastOnce(target: RedisTarget, prefix: string): Sink<Row> {
  return new RedisAtLeastOnceSink<Row>({
    connection: target,
    keyPrefix: prefix,
    operations: (r) => ({ op: "set", key: r.key, value: r.id }),
    operationsPerFlush: 1,
  });
}

function upsert(target: RedisTarget, prefix: string): Sink<Row> {
  return new RedisUpsertSink<Row>({
    connection: target,
    keyPrefix: prefix,
    key: (r) => r.key,
    version: (r) => r.id,
    value: { shape: "string", of: (r) => String(r.id) },
  });
}

function causeOf<E>(error: unknown, type: abstract new (...args: never[]) => E): E | undefined {
  for (let e = error; e instanceof Error; e = e.cause) if (e instanceof type) return e;
  return undefined;
}

async function checkpoint(sink: Sink<Row>, id: number): Promise<unknown> {
  const state = await sink.snapshotState(id);
  await sink.notifyCheckpointComplete(id);
  return state;
}

/** What the write-ahead sink's keys hold: the total and the pushed ids. */
async function walView(target: RedisTarget, prefix: string): Promise<{ total: number; ids: number[] }> {
  return withRedis(target, async (client) => ({
    total: Number((await client.get(`${prefix}total`)) ?? 0),
    ids: (await client.lrange(`${prefix}ids`, 0, -1)).map(Number),
  }));
}

/** The data keys the upsert sink wrote (neither version nor fence keys). */
async function upsertedKeys(target: RedisTarget, prefix: string): Promise<string[]> {
  return withRedis(target, async (client) =>
    (await keysUnder(client, prefix))
      .filter((key) => key.startsWith(prefix) && !key.includes("exactly-"))
      .map((key) => key.slice(prefix.length))
      .sort(),
  );
}

describe.each(TARGETS)("I9 on a %s", (_label, targetOf) => {
  it("write-ahead: the old owner's commit after the successor opened is refused in the script; nothing of it shows", async () => {
    const target = targetOf();
    const prefix = prefixFor(target, "wal", true);
    const shared = await storage();
    const old = writeAhead(target, prefix);
    await old.open(owned(1, shared));
    await old.writeBatch(rows([1, 2]));
    const state = await checkpoint(old, 1);
    await old.writeBatch(rows([3, 4]));
    await old.snapshotState(2);

    const successor = writeAhead(target, prefix);
    await successor.open(
      owned(2, shared, { restoredCheckpointId: 1, restoredStates: [state], allRestoredStates: [state] }),
    );
    try {
      const failure = await rejection(old.notifyCheckpointComplete(2));
      expect(causeOf(failure, ShardFencedError)?.epoch).toBe(1);
      expect(await walView(target, prefix)).toEqual({ total: 3, ids: [1, 2] });

      await successor.writeBatch(rows([3, 4, 5]));
      await checkpoint(successor, 2);
      expect(await walView(target, prefix)).toEqual({ total: 15, ids: [1, 2, 3, 4, 5] });
    } finally {
      await old.close();
      await successor.close();
    }
  });

  it("upsert: the old owner's flush after the successor opened is refused in every slot's script; none of its keys shows", async () => {
    const target = targetOf();
    // No hash tag: on the Cluster the keys spread over many slots, each call checking its slot's fence.
    const prefix = prefixFor(target, "upsert", false);
    const old = upsert(target, prefix);
    await old.open(owned(1, await storage()));
    await old.writeBatch(rows([1, 2]));
    await checkpoint(old, 1);

    const successor = upsert(target, prefix);
    await successor.open(owned(2, await storage()));
    try {
      await old.writeBatch(rows(Array.from({ length: 40 }, (_v, i) => 100 + i)));
      const failure = await rejection(old.snapshotState(2));
      expect(causeOf(failure, ShardFencedError)?.epoch).toBe(1);
      expect(await upsertedKeys(target, prefix)).toEqual(["k1", "k2"]);

      await successor.writeBatch(rows([3]));
      await checkpoint(successor, 1);
      expect(await upsertedKeys(target, prefix)).toEqual(["k1", "k2", "k3"]);
    } finally {
      await old.close();
      await successor.close();
    }
  });

  it("the scripts themselves refuse an old owner's call that read the marker before the raise, and its forgetting of markers", async () => {
    const target = targetOf();
    const prefix = prefixFor(target, "script", true);
    // The successor at epoch 3, the old owner at 2.
    const successor = writeAhead(target, prefix);
    await successor.open(owned(3, await storage()));
    const upserter = upsert(target, prefix);
    await upserter.open(owned(3, await storage()));
    const port = await connectRedis(target);
    try {
      // The old owner's next call, exactly as its sink sends it: checkpoint 2, operations 0…0 of 1, epoch 2.
      const marker = `${prefix}exactly-wal:wal:0`;
      const apply = port.runScript("applyChunk", [
        { keys: [marker, `${prefix}total`], args: [2, 0, 1, 1, 2, "INCRBY", 1, 1, 5] },
      ]);
      expect(String(await rejection(apply))).toContain("exactly: fenced: epoch 2 is below 3");
      // An upsert of subtask 0 at epoch 2, in the fence hash of its slot (the prefix's tag).
      const fence = `${prefix}exactly-wal:fenced:fences`;
      const write = port.runScript("guardedUpsert", [
        { keys: [fence, `${prefix}k9`, `${prefix}k9:exactly-version`], args: ["string", 0, 2, 0, 9, 1, "9"] },
      ]);
      expect(String(await rejection(write))).toContain("exactly: fenced: epoch 2 is below 3");
      expect(await walView(target, prefix)).toEqual({ total: 0, ids: [] });
      expect(await upsertedKeys(target, prefix)).toEqual([]);
      // A fresh start's forgetting of markers, as an older owner paused in its open would send it.
      await withRedis(target, (client) => client.hset(marker, "checkpoint", 4, "ops", 1, "done", 1));
      const forget = port.runScript("forgetMarkers", [{ keys: [marker], args: [2] }]);
      expect(String(await rejection(forget))).toContain("exactly: fenced: epoch 2 is below 3");
      await port.runScript("forgetMarkers", [{ keys: [marker], args: [3] }]);
      expect(await withRedis(target, (client) => client.hgetall(marker))).toEqual({ fence: "3" });
    } finally {
      await port.close();
      await successor.close();
      await upserter.close();
    }
  });

  it("at least once: the old owner's commands after the successor opened are refused in every slot's script; none shows", async () => {
    const target = targetOf();
    const prefix = prefixFor(target, "alo", false);
    const old = atLeastOnce(target, prefix);
    await old.open(owned(1, await storage()));
    await old.writeBatch(rows([1]));
    await checkpoint(old, 1);

    const successor = atLeastOnce(target, prefix);
    await successor.open(owned(2, await storage()));
    try {
      const failure = await rejection(
        (async () => {
          await old.writeBatch(rows(Array.from({ length: 20 }, (_v, i) => 100 + i)));
          await old.snapshotState(2);
        })(),
      );
      expect(causeOf(failure, ShardFencedError)?.epoch).toBe(1);
      expect(await upsertedKeys(target, prefix)).toEqual(["k1"]);
      await successor.writeBatch(rows([2]));
      await checkpoint(successor, 1);
      expect(await upsertedKeys(target, prefix)).toEqual(["k1", "k2"]);
    } finally {
      await old.close();
      await successor.close();
    }
  });

  it.each(["write-ahead", "upsert"] as const)("%s: an owner older than the fence refuses to open", async (kind) => {
    const target = targetOf();
    const prefix = prefixFor(target, `late-${kind}`, true);
    const make = kind === "write-ahead" ? writeAhead : upsert;
    const newer = make(target, prefix);
    await newer.open(owned(3, await storage()));
    await newer.close();
    const older = make(target, prefix);
    const error = await rejection(older.open(owned(2, await storage())));
    await older.close();
    expect(causeOf(error, ShardFencedError)?.epoch).toBe(2);
  });

  it.each(["write-ahead", "upsert", "at-least-once"] as const)(
    "%s: a job run again from a fresh checkpoint location, whose epochs begin above the earlier run's, raises its fences",
    async (kind) => {
      const target = targetOf();
      const prefix = prefixFor(target, `rerun-${kind}`, true);
      const make = { "write-ahead": writeAhead, upsert, "at-least-once": atLeastOnce }[kind];
      const earlier = make(target, prefix);
      await earlier.open(owned(5, await storage()));
      await earlier.close();
      // The new run's epochs begin at its first layout's clock, above the earlier run's: its owners open and write.
      for (const epoch of [6, 7]) {
        const sink = make(target, prefix);
        await sink.open(owned(epoch, await storage()));
        await sink.writeBatch(rows([epoch]));
        await checkpoint(sink, 1);
        await sink.close();
      }
    },
  );

  it.each(["write-ahead", "upsert", "at-least-once"] as const)(
    "%s: without ownership the sink writes no fence: no fence key or field appears",
    async (kind) => {
      const target = targetOf();
      const prefix = prefixFor(target, `plain-${kind}`, true);
      const sink = { "write-ahead": writeAhead, upsert, "at-least-once": atLeastOnce }[kind](target, prefix);
      await sink.open({ ...sinkContext("plain"), storage: await storage() });
      try {
        await sink.writeBatch(rows([1, 2]));
        await checkpoint(sink, 1);
      } finally {
        await sink.close();
      }
      await withRedis(target, async (client) => {
        const keys = await keysUnder(client, prefix);
        expect(keys.filter((key) => key.endsWith(":fences"))).toEqual([]);
        for (const key of keys.filter((k) => k.includes("exactly-wal:"))) {
          expect(await client.hexists(key, "fence")).toBe(0);
        }
        if (kind === "write-ahead") expect(keys.some((k) => k.includes("exactly-wal:"))).toBe(true);
      });
    },
  );
});
