/**
 * Which shard of a job this process runs (docs/design.md §2, Shards): shard k of N runs
 * every stage's global subtasks k·p … k·p+p−1, p being the stage's parallelism in the job
 * as written, and with them the key-group range k of N and the source splits those
 * subtasks own. Parsed once here from `--shard k/N`, `EXACTLY_SHARD=k/N`, or `--shards N`
 * and a StatefulSet pod's hostname `name-k`.
 */
import { ConfigurationError } from "../errors.ts";
import { type Key, keyGroupOf, subtaskForKeyGroup } from "../operators/key-groups.ts";

/** Shard k of N. @public */
export interface ShardSpec {
  /** k: 0 ≤ k < count. */
  readonly index: number;
  /** N: the number of shards the job runs as. */
  readonly count: number;
}

/** `k/N` as `--shard` and `EXACTLY_SHARD` write it; refused, naming `setting`, unless 0 ≤ k < N. @internal */
export function parseShard(text: string, setting: string): ShardSpec {
  const match = /^(\d+)\/(\d+)$/.exec(text.trim());
  if (!match) throw new ConfigurationError(setting, `must be k/N (for example 0/3), got "${text}"`);
  const index = Number(match[1]);
  const count = Number(match[2]);
  return requireShard({ index, count }, setting);
}

/** Refuses a shard outside 0 ≤ k < N, N ≥ 1, naming the setting. */
export function requireShard(shard: ShardSpec, setting: string): ShardSpec {
  const { index, count } = shard;
  if (!Number.isSafeInteger(count) || count < 1)
    throw new ConfigurationError(setting, `the number of shards must be a positive integer, got ${count}`);
  if (!Number.isSafeInteger(index) || index < 0 || index >= count)
    throw new ConfigurationError(setting, `shard ${index} does not exist in ${count} shards (0 to ${count - 1})`);
  return shard;
}

/**
 * The shard of a StatefulSet pod: its hostname is `<name>-<ordinal>`, and the ordinal is k.
 * A hostname without an ordinal is refused, naming `--shards`.
 * @internal
 */
export function shardFromHostname(count: number, hostname: string, setting = "--shards"): ShardSpec {
  const match = /-(\d+)$/.exec(hostname);
  if (!match)
    throw new ConfigurationError(
      setting,
      `takes the shard from a StatefulSet hostname ending in -<ordinal>, and "${hostname}" has none; ` +
        "give --shard k/N instead",
    );
  return requireShard({ index: Number(match[1]), count }, setting);
}

/**
 * The shard a process runs, from its command line and environment: `--shard k/N`, else
 * `EXACTLY_SHARD=k/N`, else `--shards N` with k from the hostname; undefined when none is given.
 * Two of them at once is refused: a shard must never be chosen by accident.
 * @internal
 */
export function shardOfProcess(given: {
  readonly shard?: string | undefined;
  readonly shards?: number | undefined;
  readonly env?: string | undefined;
  readonly hostname: string;
}): ShardSpec | undefined {
  const set = [given.shard !== undefined, given.shards !== undefined, given.env !== undefined && given.env !== ""];
  if (set.filter(Boolean).length > 1)
    throw new ConfigurationError(
      "--shard",
      "give the shard one way: --shard k/N, --shards N (k from the hostname) or EXACTLY_SHARD=k/N",
    );
  if (given.shard !== undefined) return parseShard(given.shard, "--shard");
  if (given.shards !== undefined) return shardFromHostname(given.shards, given.hostname, "--shards");
  if (given.env) return parseShard(given.env, "EXACTLY_SHARD");
  return undefined;
}

/** `shard-k`, the folder (or key prefix) of shard k's checkpoints and bookkeeping. */
export function shardName(shard: ShardSpec): string {
  return `shard-${shard.index}`;
}

/** A name {@link shardName} makes, with k as its group. */
export const SHARD_SCOPE = /^shard-(\d+)$/;

/** The first global subtask shard k runs of a stage whose per-shard parallelism is `parallelism`. */
export function firstGlobalSubtask(shard: ShardSpec | undefined, parallelism: number): number {
  return shard ? shard.index * parallelism : 0;
}

/** A stage's parallelism over every shard: N × its parallelism in one shard. */
export function globalParallelism(shard: ShardSpec | undefined, parallelism: number): number {
  return shard ? shard.count * parallelism : parallelism;
}

/**
 * Whether shard k's key-group range holds `key`: what a source of a sharded job checks to
 * read only its own keys when its input is not already partitioned that way.
 * @public
 */
export function ownsKey(shard: ShardSpec, key: Key, maxParallelism: number): boolean {
  return subtaskForKeyGroup(keyGroupOf(key, maxParallelism), maxParallelism, shard.count) === shard.index;
}
