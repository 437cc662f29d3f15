/**
 * How many shards a job runs as, and where a new layout starts from (docs/design.md §2,
 * Shards, Rescale). One conditional record at the checkpoint location's root, `_layout`,
 * holds the layout: its shard count, its generation, the least epoch its owners hold, and its
 * **base** — the checkpoint of every shard of the layout before, which each new shard restores
 * its part of until it completed a checkpoint of its own. The first process started with
 * another shard count moves the layout on: it fences every shard of the current layout (their
 * heads refuse anything after), reads where each one stopped, and replaces the record; the
 * other new shards find the record already moved and join.
 */
import type { CheckpointStorage, RestoredCheckpoint } from "../checkpoint/checkpoint-storage.ts";
import { ConfigurationError } from "../errors.ts";
import { CheckpointHead, type HeadState } from "./checkpoint-head.ts";
import type { ConditionalRecord } from "./conditional-record.ts";
import { shardName } from "./shard-spec.ts";

/** One checkpoint a new layout starts from: of shard `shard` (undefined: the job before it was sharded). */
export interface BaseCheckpoint {
  readonly shard: number | undefined;
  readonly checkpointId: number;
  /** The epoch folder it is in; undefined for an unsharded checkpoint. */
  readonly epoch: number | undefined;
}

export interface ShardLayout {
  readonly count: number;
  /** 1 for the first sharded run, one more at each change of shard count. */
  readonly generation: number;
  /** Every owner in this layout holds at least this epoch: above every epoch of the layouts before. */
  readonly minEpoch: number;
  readonly base: readonly BaseCheckpoint[];
}

type Storage = CheckpointStorage & Required<Pick<CheckpointStorage, "scoped" | "record" | "load">>;

/** A sub-folder of a storage that has them is such a storage too (the file system's, S3's). */
function sub(storage: Storage, ...names: string[]): Storage {
  let scoped = storage;
  for (const name of names) scoped = scoped.scoped(name) as Storage;
  return scoped;
}

function shardFolder(storage: Storage, shard: number): Storage {
  return sub(storage, shardName({ index: shard, count: shard + 1 }));
}

function headOf(storage: Storage, shard: number): CheckpointHead {
  return new CheckpointHead(shardFolder(storage, shard).record<HeadState>("head"));
}

async function headState(storage: Storage, shard: number): Promise<HeadState | undefined> {
  return (await shardFolder(storage, shard).record<HeadState>("head").read())?.value;
}

/**
 * The layout this process runs in, as `count` shards: the current one if it has that count,
 * otherwise a new one it makes (a rescale). `knownGeneration` is the generation this process
 * already ran in, if any: a process of an older layout never moves the layout back.
 */
export async function settleLayout(
  storage: Storage,
  count: number,
  knownGeneration: number | undefined,
  log: (message: string) => void,
): Promise<ShardLayout> {
  const record: ConditionalRecord<ShardLayout> = storage.record<ShardLayout>("layout");
  for (;;) {
    const current = await record.read();
    if (current && knownGeneration !== undefined && current.value.generation !== knownGeneration)
      throw new ConfigurationError(
        "shard",
        `the job was rescaled to ${current.value.count} shards (layout generation ${current.value.generation}) while this process ran in generation ${knownGeneration}; start it again with the new shard count`,
      );
    if (current?.value.count === count) return current.value;
    const next = current ? await nextLayout(storage, current.value, count) : await firstLayout(storage, count);
    if (await record.replace(current?.version, next)) {
      log(
        current
          ? `rescaled from ${current.value.count} to ${count} shards (layout generation ${next.generation}): each shard restores its part of ${describeBase(next.base)}`
          : `first run as ${count} shards${next.base.length > 0 ? `, from the unsharded checkpoint ${next.base[0]?.checkpointId}` : ""}`,
      );
      return next;
    }
  }
}

function describeBase(base: readonly BaseCheckpoint[]): string {
  if (base.length === 0) return "nothing (no shard had completed a checkpoint)";
  return base.map((b) => `shard ${b.shard}'s checkpoint ${b.checkpointId}`).join(", ");
}

/** The first sharded layout: from the job's unsharded checkpoints at the location's root, if any. */
async function firstLayout(storage: Storage, count: number): Promise<ShardLayout> {
  const latest = await storage.loadLatest();
  return {
    count,
    generation: 1,
    minEpoch: 1,
    base: latest ? [{ shard: undefined, checkpointId: latest.metadata.checkpointId, epoch: undefined }] : [],
  };
}

/**
 * A rescale: fence every shard of `current` at one epoch above all of theirs, then take the
 * checkpoint each one's head names. Fencing first means no shard of the old layout completes
 * a checkpoint after it was read. A shard that completed none in its layout still holds its
 * part of that layout's base only in memory of nothing: refused, naming it.
 */
async function nextLayout(storage: Storage, current: ShardLayout, count: number): Promise<ShardLayout> {
  let epoch = current.minEpoch;
  for (let shard = 0; shard < current.count; shard++)
    epoch = Math.max(epoch, (await headState(storage, shard))?.epoch ?? 0);
  const minEpoch = epoch + 1;
  const base: BaseCheckpoint[] = [];
  const withoutCheckpoint: number[] = [];
  for (let shard = 0; shard < current.count; shard++) {
    const head = headOf(storage, shard);
    const latest = await head.fence(minEpoch);
    const restored = latest
      ? await sub(shardFolder(storage, shard), `epoch-${latest.epoch}`).load(latest.checkpointId)
      : undefined;
    if (!latest || restored?.metadata.generation !== current.generation) withoutCheckpoint.push(shard);
    else base.push({ shard, checkpointId: latest.checkpointId, epoch: latest.epoch });
  }
  const started = base.length > 0 || current.base.length > 0;
  if (withoutCheckpoint.length > 0 && started)
    throw new ConfigurationError(
      "shard",
      `cannot rescale from ${current.count} to ${count} shards: shard(s) ${withoutCheckpoint.join(", ")} of ${current.count} completed no checkpoint since the layout began; ` +
        `run them as k/${current.count} until each has completed one, then rescale`,
    );
  return { count, generation: current.generation + 1, minEpoch, base };
}

/**
 * The checkpoints of a layout's base as one: every old shard's task states under their global
 * task keys, and the stages at the old global parallelism, so the rescale rules (engine/
 * restore-assignment.ts) hand each new subtask its share as after any change of parallelism.
 */
export async function loadBase(
  storage: Storage,
  base: readonly BaseCheckpoint[],
): Promise<RestoredCheckpoint | undefined> {
  const parts: RestoredCheckpoint[] = [];
  for (const entry of base) {
    const from = entry.shard === undefined ? storage : sub(shardFolder(storage, entry.shard), `epoch-${entry.epoch}`);
    const restored = await from.load(entry.checkpointId);
    if (!restored)
      throw new ConfigurationError(
        "shard",
        `checkpoint ${entry.checkpointId} of ${entry.shard === undefined ? "the unsharded job" : `shard ${entry.shard}`}, which this layout starts from, is missing`,
      );
    parts.push(restored);
  }
  const [first] = parts;
  if (!first) return undefined;
  const states = new Map<string, unknown>();
  for (const part of parts) for (const [key, state] of part.states) states.set(key, state);
  const { shard: _shard, epoch: _epoch, generation: _generation, ...metadata } = first.metadata;
  return {
    metadata: {
      ...metadata,
      checkpointId: Math.max(...parts.map((p) => p.metadata.checkpointId)),
      taskStates: Object.fromEntries(parts.flatMap((p) => Object.entries(p.metadata.taskStates))),
    },
    states,
  };
}
