/**
 * How many shards a job runs as, and where a new layout starts from (docs/design.md §2,
 * Shards, Rescale). One conditional record at the checkpoint location's root, `_layout`,
 * holds the layout: its shard count, its generation, the least epoch its owners hold, and its
 * **base** — the checkpoint of every shard of the layout before, which each new shard restores
 * its part of until it completed a checkpoint of its own. A rescale is declared first
 * (`declareRescale`, `exactly rescale`): a process whose shard count is not the layout's may be
 * one of an older layout started again, and only a declaration tells the two apart. The first
 * process started with the declared count moves the layout on: it fences every shard of the
 * current layout (their heads refuse anything after), reads where each one stopped, and
 * replaces the record; the other new shards find the record already moved and join.
 */
import type { CheckpointStorage, RestoredCheckpoint } from "../checkpoint/checkpoint-storage.ts";
import { ConfigurationError } from "../errors.ts";
import { CheckpointHead, type HeadState } from "./checkpoint-head.ts";
import {
  type ConditionalRecord,
  describeRecord,
  InvalidRecordError,
  type VersionedValue,
} from "./conditional-record.ts";
import { nextEpoch, requireEpoch } from "./shard-lease.ts";
import { shardName } from "./shard-spec.ts";

/** One checkpoint a new layout starts from: of shard `shard` (undefined: the job before it was sharded). @public */
export interface BaseCheckpoint {
  readonly shard: number | undefined;
  readonly checkpointId: number;
  /** The epoch folder it is in; undefined for an unsharded checkpoint. */
  readonly epoch: number | undefined;
}

/**
 * How many shards a job runs as, and the checkpoints its current layout started from; {@link
 * declareRescale} changes it.
 * @public
 */
export interface ShardLayout {
  readonly count: number;
  /** 1 for the first sharded run, one more at each change of shard count. */
  readonly generation: number;
  /** Every owner in this layout holds at least this epoch: above every epoch of the layouts before. */
  readonly minEpoch: number;
  readonly base: readonly BaseCheckpoint[];
  /** Set while a rescale to this layout is under way: the layout it replaces (see settleLayout). */
  readonly moving?: ShardLayout;
  /** A rescale to this many shards was declared (declareRescale): a process of that count moves the layout. */
  readonly next?: number;
}

/** Reads the layout record, refusing, naming it, what exactly never writes (a fence must compare true numbers). */
async function readLayout(record: ConditionalRecord<ShardLayout>): Promise<VersionedValue<ShardLayout> | undefined> {
  const current = await record.read();
  if (!current) return undefined;
  const where = describeRecord(record, "the shard layout");
  const check = (layout: ShardLayout) => {
    for (const field of ["count", "generation"] as const) {
      const n = layout[field];
      if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 1)
        throw new InvalidRecordError(where, `${field} ${JSON.stringify(n)} is not a positive whole number`);
    }
    requireEpoch(layout.minEpoch, where, "minEpoch");
  };
  check(current.value);
  if (current.value.moving) check(current.value.moving);
  return current;
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
 *
 * A rescale is two replacements of the record, so that any process of the new layout can
 * finish one that another began and died in: first the move is reserved (`moving`, with the
 * epoch every old shard is fenced at), then the old heads are fenced at that epoch (a no-op
 * where they are already there) and the checkpoint each one names becomes the base.
 */
export async function settleLayout(
  storage: Storage,
  count: number,
  knownGeneration: number | undefined,
  log: (message: string) => void,
  /**
   * Resolves once no process of `layout` owns any of its shards (undefined: once the job run
   * without shards no longer holds the location): a rescale, or the first layout, starts only then.
   */
  stopped: (layout: ShardLayout | undefined) => Promise<void>,
): Promise<ShardLayout> {
  const record: ConditionalRecord<ShardLayout> = storage.record<ShardLayout>("layout");
  for (;;) {
    const current = await readLayout(record);
    const layout = current?.value;
    if (layout?.moving) {
      const settled = await settleMove(storage, layout, layout.moving);
      if (await record.replace(current?.version, settled))
        log(
          `rescaled from ${layout.moving.count} to ${settled.count} shards (layout generation ${settled.generation}): each shard restores its part of ${describeBase(settled.base)}`,
        );
      continue;
    }
    if (layout && knownGeneration !== undefined && layout.generation !== knownGeneration)
      throw new ConfigurationError(
        "shard",
        `the job was rescaled to ${layout.count} shards (layout generation ${layout.generation}) while this process ran in generation ${knownGeneration}; start it again with the new shard count`,
      );
    if (layout?.count === count) return layout;
    if (!layout) {
      await stopped(undefined);
      const first = await firstLayout(storage, count);
      if (await record.replace(undefined, first))
        log(
          `first run as ${count} shards${first.base.length > 0 ? `, from the unsharded checkpoint ${first.base[0]?.checkpointId}` : ""}`,
        );
      continue;
    }
    if (layout.next !== count)
      throw new ConfigurationError(
        "shard",
        `the job runs as ${layout.count} shards (layout generation ${layout.generation}) and this process as ${count}: ` +
          `a process of an earlier layout started again, or a rescale nobody declared. To rescale to ${count} shards, run ` +
          `\`exactly rescale <checkpoint location> ${count}\` (declareRescale) and then start ${count} shards; otherwise start this process as one of ${layout.count}`,
      );
    // Stop all N shards, then start N′: a running shard of the old layout is waited for, never
    // fenced from under it (a rolling update would otherwise move the layout back and forth).
    await stopped(layout);
    await record.replace(current?.version, await reserveMove(storage, layout, count));
  }
}

/**
 * Declares a rescale of the job whose checkpoints are at `storage` to `count` shards (`exactly
 * rescale`): the first process started as one of `count` then moves the layout, once every
 * shard of the current one has stopped. Without it, a process whose count is not the layout's
 * is refused: it may be a process of an older layout started again. Declaring the current
 * count withdraws a declaration. Returns the layout as it now stands.
 * @public
 */
export async function declareRescale(storage: CheckpointStorage, count: number): Promise<ShardLayout> {
  if (!Number.isSafeInteger(count) || count < 1)
    throw new ConfigurationError("count", `the number of shards must be a positive integer, got ${count}`);
  if (!storage.record)
    throw new ConfigurationError(
      "checkpoint.storage",
      "this storage has no conditional records, so it holds no sharded job's layout",
    );
  const record = storage.record<ShardLayout>("layout");
  for (;;) {
    const current = await readLayout(record);
    if (!current)
      throw new ConfigurationError(
        "count",
        `${describeRecord(record, "the location")} does not exist: the job never ran as shards there, and its first sharded run needs no declaration`,
      );
    const { next: _next, ...layout } = current.value;
    const declared: ShardLayout = layout.count === count ? layout : { ...layout, next: count };
    if ((await record.replace(current.version, declared)) !== undefined) return declared;
  }
}

function describeBase(base: readonly BaseCheckpoint[]): string {
  if (base.length === 0) return "nothing (no shard had completed a checkpoint)";
  return base.map((b) => `shard ${b.shard}'s checkpoint ${b.checkpointId}`).join(", ");
}

/**
 * The first sharded layout: from the job's unsharded checkpoints at the location's root, if
 * any. Its owners' epochs begin at this clock's milliseconds, not at 1: a sink's fences
 * outlive the lease (a job run again into a fresh checkpoint location keeps its sink names),
 * and a later run's epochs must be above every epoch an earlier one left there. A clock behind
 * by more than the time between the two runs gets the new run's owners refused, naming the
 * fence, never let through.
 */
async function firstLayout(storage: Storage, count: number): Promise<ShardLayout> {
  const latest = await storage.loadLatest();
  return {
    count,
    generation: 1,
    minEpoch: Date.now(),
    base: latest ? [{ shard: undefined, checkpointId: latest.metadata.checkpointId, epoch: undefined }] : [],
  };
}

/** The checkpoint a shard's head names, if it was taken in `generation`. */
async function latestOf(storage: Storage, shard: number, generation: number): Promise<BaseCheckpoint | undefined> {
  const latest = (await headState(storage, shard))?.latest;
  if (!latest) return undefined;
  const restored = await sub(shardFolder(storage, shard), `epoch-${latest.epoch}`).load(latest.checkpointId);
  if (restored?.metadata.generation !== generation) return undefined;
  return { shard, checkpointId: latest.checkpointId, epoch: latest.epoch };
}

/**
 * The first step of a rescale: the move from `current` to `count` shards, with the epoch one
 * above every old shard's. A shard of `current` that completed no checkpoint in it would lose
 * its part of the state the layout started from: refused, naming it.
 */
async function reserveMove(storage: Storage, current: ShardLayout, count: number): Promise<ShardLayout> {
  let epoch = current.minEpoch;
  const withoutCheckpoint: number[] = [];
  const where = describeRecord(storage.record<ShardLayout>("layout"), "the shard layout");
  let started = current.base.length > 0;
  for (let shard = 0; shard < current.count; shard++) {
    epoch = Math.max(epoch, (await headState(storage, shard))?.epoch ?? 0);
    if (await latestOf(storage, shard, current.generation)) started = true;
    else withoutCheckpoint.push(shard);
  }
  if (withoutCheckpoint.length > 0 && started)
    throw new ConfigurationError(
      "shard",
      `cannot rescale from ${current.count} to ${count} shards: shard(s) ${withoutCheckpoint.join(", ")} of ${current.count} completed no checkpoint since the layout began; ` +
        `run them as k/${current.count} until each has completed one, then rescale`,
    );
  const { moving: _moving, next: _next, ...from } = current;
  return { count, generation: current.generation + 1, minEpoch: nextEpoch(epoch, where), base: [], moving: from };
}

/**
 * The second step: fence every shard of the old layout at the move's epoch (none of them
 * completes a checkpoint after), then take the checkpoint each one's head names as the base.
 */
async function settleMove(storage: Storage, move: ShardLayout, from: ShardLayout): Promise<ShardLayout> {
  const base: BaseCheckpoint[] = [];
  for (let shard = 0; shard < from.count; shard++) {
    await headOf(storage, shard).raise(move.minEpoch);
    const latest = await latestOf(storage, shard, from.generation);
    if (latest) base.push(latest);
  }
  const { moving: _moving, ...settled } = move;
  return { ...settled, base };
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
