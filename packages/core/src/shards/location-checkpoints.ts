/**
 * Every checkpoint a job's checkpoint location holds, sharded or not, read only: what a tool
 * needs that must see the whole job at once (`exactly lingering` spares the work any of them
 * pre-committed; docs/design.md §4.7). A sharded job's checkpoints are spread over
 * `shard-k/epoch-<e>/chk-<id>/` (§2, Shards): no sub-folder holds them all, so a sub-folder
 * given for the location is refused, naming the root to give instead. Given shard 1's epoch
 * folder, a tool once saw none of shard 0's checkpoints and aborted work shard 0 had
 * pre-committed: that checkpoint's rows were lost.
 */
import type { CheckpointStorage, InspectedCheckpoint } from "../checkpoint/checkpoint-storage.ts";
import { CheckpointStorageError, ConfigurationError } from "../errors.ts";
import type { HeadState } from "./checkpoint-head.ts";
import { EPOCH_SCOPE } from "./shard-checkpoint-storage.ts";
import type { BaseCheckpoint, ShardLayout } from "./shard-layout.ts";
import { SHARD_SCOPE } from "./shard-spec.ts";

/** One checkpoint of the location, and where in it it is. @internal */
export interface LocationCheckpoint extends InspectedCheckpoint {
  /** The group whose folder holds it (`group-<name>/`), of a job with groups (§2, Groups). */
  readonly group?: string;
  /** The shard whose folder holds it; undefined for the job's unsharded checkpoints at the root. */
  readonly shard: number | undefined;
  /** Its epoch folder; undefined at the root. */
  readonly epoch: number | undefined;
}

/** @internal */
export interface LocationCheckpoints {
  /** The shard folders found, ascending; empty for a job that was never sharded. Of a job with groups, every group's. */
  readonly shards: readonly number[];
  /** The group folders found, of a job with groups (`group-<name>/`); empty otherwise. */
  readonly groups: readonly string[];
  /**
   * The root's own checkpoints (the job before it was sharded), then each shard's, every epoch
   * folder still there, oldest first: complete or not, and whether its head names it or not.
   */
  readonly checkpoints: readonly LocationCheckpoint[];
}

type Readable = CheckpointStorage & Required<Pick<CheckpointStorage, "inspect">>;

/**
 * Reads every checkpoint at the root `location` of a job (`storage` opened there). Refuses,
 * naming `setting`, a storage tools cannot read and a location that is a shard's folder, an
 * epoch folder or a checkpoint's folder. Throws {@link CheckpointStorageError} when a
 * checkpoint a shard's head or the layout's base names is missing: what it references cannot
 * be known then.
 * @internal
 */
export async function readLocationCheckpoints(
  storage: CheckpointStorage,
  location: string,
  setting: string,
): Promise<LocationCheckpoints> {
  const root = readable(storage, location, setting);
  const groups = ((await root.scopes?.()) ?? [])
    .map((name) => GROUP_SCOPE.exec(name)?.[1])
    .filter((g): g is string => g !== undefined)
    .sort();
  if (groups.length === 0) {
    const whole = await readJobFolder(root, location, setting);
    const group = whole.checkpoints.find((c) => c.metadata?.job?.group !== undefined)?.metadata?.job?.group;
    if (group !== undefined || GROUP_SCOPE.test(lastSegment(location)))
      throw new ConfigurationError(
        setting,
        `${location} is the folder of ${group === undefined ? "a group" : `group "${group}"`} of a job run as groups (its checkpoints only), and every checkpoint of the job is needed to tell what one pre-committed: give the job's root location ${ancestor(location, 1)}`,
      );
    return { ...whole, groups: [] };
  }
  const shards = new Set<number>();
  const checkpoints: LocationCheckpoint[] = [];
  for (const group of groups) {
    const folder = readable(root.scoped?.(`group-${group}`) as CheckpointStorage, location, setting);
    const read = await readJobFolder(folder, `${location}/group-${group}`, setting);
    for (const shard of read.shards) shards.add(shard);
    for (const c of read.checkpoints) checkpoints.push({ ...c, group });
  }
  return { shards: [...shards].sort((a, b) => a - b), groups, checkpoints };
}

/** The checkpoints of one job's folder: the job's root, or one group's folder of a job with groups. */
async function readJobFolder(
  root: Readable,
  location: string,
  setting: string,
): Promise<Omit<LocationCheckpoints, "groups">> {
  const scopes = (await root.scopes?.()) ?? [];
  const shards = scopes
    .map((name) => SHARD_SCOPE.exec(name)?.[1])
    .filter((k): k is string => k !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
  const layout = (await root.record?.<ShardLayout>("layout").read())?.value;
  const own = await root.inspect();
  await refuseSubFolder(root, location, setting, { scopes, own, sharded: shards.length > 0 || layout !== undefined });

  const checkpoints: LocationCheckpoint[] = own.map((c) => ({ ...c, shard: undefined, epoch: undefined }));
  for (const shard of shards) {
    const folder = root.scoped?.(`shard-${shard}`) as CheckpointStorage;
    // Read before the epoch folders: a checkpoint it names is then among them.
    const head = (await folder.record?.<HeadState>("head").read())?.value;
    const epochs = ((await folder.scopes?.()) ?? [])
      .map((name) => EPOCH_SCOPE.exec(name)?.[1])
      .filter((e): e is string => e !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
    for (const epoch of epochs) {
      const inEpoch = readable(folder.scoped?.(`epoch-${epoch}`) as CheckpointStorage, location, setting);
      for (const c of await inEpoch.inspect()) checkpoints.push({ ...c, shard, epoch });
    }
    if (head?.latest) requirePresent(checkpoints, { shard, ...head.latest }, `shard ${shard}'s head`, location);
  }
  for (const base of [...(layout?.base ?? []), ...(layout?.moving?.base ?? [])])
    requirePresent(checkpoints, base, "the shard layout's base", location);
  return { shards, checkpoints };
}

function readable(storage: CheckpointStorage, location: string, setting: string): Readable {
  if (!storage.inspect)
    throw new ConfigurationError(setting, `${location}: this checkpoint storage cannot be read by tools`);
  return storage as Readable;
}

function requirePresent(
  checkpoints: readonly LocationCheckpoint[],
  named: BaseCheckpoint,
  by: string,
  location: string,
): void {
  const found = checkpoints.some(
    (c) =>
      c.metadata !== undefined &&
      c.checkpointId === named.checkpointId &&
      c.shard === named.shard &&
      c.epoch === named.epoch,
  );
  if (found) return;
  const where = named.shard === undefined ? "the root" : `shard-${named.shard}/epoch-${named.epoch}`;
  throw new CheckpointStorageError(
    `${by} names checkpoint ${named.checkpointId} in ${where} of ${location}, and it is not there complete, so what it references cannot be read (a job still running there may have moved on: read a stopped job's location)`,
  );
}

const CHECKPOINT_SCOPE = /^chk-(\d+)$/;

/** A group's folder in a job's location (stream-job.ts : groupScope). */
const GROUP_SCOPE = /^group-([A-Za-z0-9][A-Za-z0-9._-]*)$/;

function lastSegment(location: string): string {
  return pathOf(location).split("/").filter(Boolean).at(-1) ?? "";
}

/**
 * A shard's folder (it has a head, or epoch folders), an epoch folder (its checkpoints name
 * their shard) or, by name where nothing else tells, a checkpoint's folder: refused, naming
 * the root above it.
 */
async function refuseSubFolder(
  storage: Readable,
  location: string,
  setting: string,
  found: { scopes: readonly string[]; own: readonly InspectedCheckpoint[]; sharded: boolean },
): Promise<void> {
  if (found.sharded) return;
  let refused: { what: string; levels: number } | undefined;
  const shardOf = found.own.find((c) => c.metadata?.shard !== undefined)?.metadata?.shard;
  if (shardOf)
    refused = { what: `an epoch folder of shard ${shardOf.index} (some of one shard's checkpoints)`, levels: 2 };
  else if (
    found.scopes.some((name) => EPOCH_SCOPE.test(name)) ||
    (await storage.record?.<HeadState>("head").read()) !== undefined
  )
    refused = { what: "a shard's folder (one shard's checkpoints)", levels: 1 };
  else if (!found.own.some((c) => c.metadata !== undefined)) refused = byName(location);
  if (!refused) return;
  // Inside a group's folder, the job's root is one more level up.
  const segments = pathOf(location).split("/").filter(Boolean);
  const levels = GROUP_SCOPE.test(segments[segments.length - 1 - refused.levels] ?? "")
    ? refused.levels + 1
    : refused.levels;
  throw new ConfigurationError(
    setting,
    `${location} is ${refused.what}, and every checkpoint of the job is needed to tell what one pre-committed: give the job's root location ${ancestor(location, levels)}`,
  );
}

/** Where the location holds nothing that tells: its last segments, `shard-k[/epoch-e][/chk-id]` or `chk-id`. */
function byName(location: string): { what: string; levels: number } | undefined {
  const segments = pathOf(location).split("/").filter(Boolean);
  const last = (n: number) => segments[segments.length - n] ?? "";
  const checkpoint = CHECKPOINT_SCOPE.test(last(1)) ? 1 : 0;
  if (EPOCH_SCOPE.test(last(1 + checkpoint)) && SHARD_SCOPE.test(last(2 + checkpoint)))
    return {
      what: checkpoint
        ? "one checkpoint's folder of a shard"
        : "an epoch folder of a shard (some of one shard's checkpoints)",
      levels: 2 + checkpoint,
    };
  if (checkpoint) return { what: "one checkpoint's folder", levels: 1 };
  if (SHARD_SCOPE.test(last(1))) return { what: "a shard's folder (one shard's checkpoints)", levels: 1 };
  return undefined;
}

/** `scheme://authority` of a URL location (`s3://bucket`), '' for a path. */
function authorityOf(location: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\/[^/]*/i.exec(location)?.[0] ?? "";
}

function pathOf(location: string): string {
  return location.slice(authorityOf(location).length);
}

/** The location `levels` folders up; never above a URL's authority or a path's root. */
function ancestor(location: string, levels: number): string {
  const authority = authorityOf(location);
  let path = pathOf(location).replace(/\/+$/, "");
  for (let i = 0; i < levels; i++) path = path.slice(0, Math.max(0, path.lastIndexOf("/")));
  if (authority) return `${authority}${path}`;
  if (path) return path;
  return location.startsWith("/") ? "/" : ".";
}
