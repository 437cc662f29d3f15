/**
 * The Redis sinks' fences in a sharded job (I9, docs/design.md §2 Shards and §5): fields of
 * hashes in the reserved `exactly-wal:` namespace, each holding the epoch of the newest owner
 * of one subtask index. A sink raises them to its epoch when it opens (`raiseFences`, one
 * script: all or nothing) and every script that writes checks its fence in the same script,
 * so an old owner's call runs either wholly before the raise or not at all: Redis runs one
 * script at a time, no lock is needed.
 *
 * A script's keys share one slot on a Cluster, so a fence must sit in the slot of the keys it
 * guards. The write-ahead sink's keys all share its prefix's hash tag: its fence is a field of
 * its marker hash. The upsert sink writes keys of every slot: its fences are one hash per slot
 * (`<keyPrefix>{<tag>}exactly-wal:<sink>:fences`, a field per subtask, the tag picked so the
 * hash lands in that slot), raised in all 16,384 at open; one hash does on a single server, or
 * when the prefix has a hash tag of its own.
 *
 * Fences outlive the lease they came from: a job run again from a fresh checkpoint location
 * keeps its sink names. Its epochs begin at its first layout's clock (core's shard-layout.ts),
 * above every epoch an earlier run left, so it raises those fences like any newer owner.
 */
import { ConfigurationError, ShardFencedError } from "@exactly/core";
import { hashTag, MARKER_NAMESPACE } from "./key-names.ts";
import { FENCED_REPLY } from "./lua/scripts.ts";
import type { RedisConnection, ScriptCall } from "./redis-connection.ts";

const SLOTS = 16_384;

/** What to do when the fences outlived the lease they came from (epochs begin again with a new lease). */
export const RESET_HINT =
  " (if the shard's lease and checkpoints were deleted, so that epochs began again, delete the sink's fences: the `fence` fields of its markers, its `…:fences` hashes)";

/** The error a fenced script call ends with, as `ShardFencedError`; undefined for any other. */
export function fencedError(error: unknown, sink: string): ShardFencedError | undefined {
  const match = FENCED_REPLY.exec(error instanceof Error ? error.message : "");
  if (!match) return undefined;
  return new ShardFencedError(
    Number(match[1]),
    `sink ${sink}: a newer owner (epoch ${match[2]}) raised its fence in Redis; nothing this owner writes may become visible${RESET_HINT}`,
  );
}

/** Raises fences, each call one script (its keys in one slot); refused as a whole call with `ShardFencedError`. */
export async function raiseFences(connection: RedisConnection, calls: readonly ScriptCall[], sink: string) {
  try {
    await connection.runScript("raiseFences", calls);
  } catch (error) {
    throw fencedError(error, sink) ?? error;
  }
}

/** The upsert sink's fence hashes: the one a call in `slot` checks, and all of them to raise. */
export class UpsertFences {
  private readonly single: string | undefined;
  private readonly bySlot: string[] = [];

  constructor(connection: RedisConnection, keyPrefix: string, sink: string) {
    const name = (tag: string) => `${keyPrefix}${tag}${MARKER_NAMESPACE}${sink}:fences`;
    if (!connection.clustered || hashTag(keyPrefix) !== undefined) {
      this.single = name("");
      return;
    }
    // A tag per slot: the smallest number whose key lands there (about 170,000 tries for all).
    let left = SLOTS;
    for (let t = 0; left > 0; t++) {
      if (t > 50 * SLOTS)
        throw new ConfigurationError("keyPrefix", `"${keyPrefix}" leaves the fence keys in too few Cluster slots`);
      const key = name(`{${t}}`);
      const slot = connection.slotOf(key) as number;
      if (this.bySlot[slot] === undefined) {
        this.bySlot[slot] = key;
        left--;
      }
    }
  }

  /** The fence hash in the slot of `key`. */
  of(slot: number | undefined): string {
    return this.single ?? (this.bySlot[slot as number] as string);
  }

  /** One call per fence hash, raising the fields of `indexes` to the script's epoch. */
  raiseCalls(indexes: readonly number[], epoch: number): ScriptCall[] {
    const hashes = this.single === undefined ? this.bySlot : [this.single];
    return hashes.map((hash) => ({ keys: indexes.map(() => hash), args: [epoch, ...indexes] }));
  }
}
