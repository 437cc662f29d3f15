/**
 * What every checkpoint storage of `chk-<id>/` folders does the same way, whatever holds the
 * folders (a file system, S3): finding the latest complete checkpoint, listing complete ones,
 * and keeping the last K. A storage supplies the three primitives below.
 */
import { CheckpointStorageError } from "../errors.ts";
import type { CheckpointMetadata, InspectedCheckpoint, RestoredCheckpoint } from "./checkpoint-storage.ts";

/** @internal */
export const METADATA = "_metadata";
/** Written into a complete checkpoint's folder once every sink committed it (`markCommitted`). @internal */
export const COMMITTED = "_committed";

/** @internal */
export interface CheckpointFolders {
  /** Ids of the folders that exist, ascending. */
  ids(): Promise<number[]>;
  /** The text of `name` in checkpoint `checkpointId`'s folder, or undefined if it does not exist. */
  readText(checkpointId: number, name: string): Promise<string | undefined>;
  /** Removes a checkpoint's folder; a complete one loses its metadata first. */
  deleteCheckpoint(checkpointId: number): Promise<void>;
}

/** A checkpoint's metadata, or undefined while it is incomplete. @internal */
export async function readMetadata(
  folders: CheckpointFolders,
  checkpointId: number,
): Promise<CheckpointMetadata | undefined> {
  const text = await folders.readText(checkpointId, METADATA);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as CheckpointMetadata;
  } catch (error) {
    throw new CheckpointStorageError(`metadata of checkpoint ${checkpointId} is not valid JSON`, { cause: error });
  }
}

/** @internal */
export async function listCompleted(folders: CheckpointFolders): Promise<CheckpointMetadata[]> {
  const result: CheckpointMetadata[] = [];
  for (const checkpointId of await folders.ids()) {
    const metadata = await readMetadata(folders, checkpointId);
    if (metadata) result.push(metadata);
  }
  return result;
}

/** The newest checkpoint with metadata, with every task state it lists (all must be readable). @internal */
export async function loadLatest(folders: CheckpointFolders): Promise<RestoredCheckpoint | undefined> {
  const ids = await folders.ids();
  for (let i = ids.length - 1; i >= 0; i--) {
    const restored = await loadCheckpoint(folders, ids[i] as number);
    if (restored) return restored;
  }
  return undefined;
}

/** One checkpoint with every task state it lists; undefined if it has no metadata. @internal */
export async function loadCheckpoint(
  folders: CheckpointFolders,
  checkpointId: number,
): Promise<RestoredCheckpoint | undefined> {
  const metadata = await readMetadata(folders, checkpointId);
  if (!metadata) return undefined;
  const states = new Map<string, unknown>();
  for (const [taskKey, file] of Object.entries(metadata.taskStates)) {
    try {
      const text = await folders.readText(checkpointId, file);
      if (text === undefined) throw new Error("missing");
      states.set(taskKey, JSON.parse(text));
    } catch (error) {
      throw new CheckpointStorageError(`state ${file} of complete checkpoint ${checkpointId} is unreadable`, {
        cause: error,
      });
    }
  }
  return { metadata, states };
}

/** Every folder, oldest first, with the states of complete ones; reads only. @internal */
export async function inspectFolders(folders: CheckpointFolders): Promise<InspectedCheckpoint[]> {
  const result: InspectedCheckpoint[] = [];
  for (const checkpointId of await folders.ids()) {
    const metadata = await readMetadata(folders, checkpointId);
    const states = new Map<string, { bytes: number; state: unknown }>();
    for (const [taskKey, file] of Object.entries(metadata?.taskStates ?? {})) {
      const text = await folders.readText(checkpointId, file);
      if (text === undefined) {
        throw new CheckpointStorageError(`state ${file} of complete checkpoint ${checkpointId} is missing`);
      }
      states.set(taskKey, { bytes: Buffer.byteLength(text), state: JSON.parse(text) as unknown });
    }
    const committed = metadata !== undefined && (await folders.readText(checkpointId, COMMITTED)) !== undefined;
    result.push({ checkpointId, metadata, states, committed });
  }
  return result;
}

/**
 * Keeps the `retained` newest complete checkpoints up to `latest` and removes older ones,
 * and incomplete folders older than `latest`; folders above `latest` may be in flight.
 * @internal
 */
export async function applyRetention(folders: CheckpointFolders, latest: number, retained: number): Promise<void> {
  const ids = await folders.ids();
  let kept = 0;
  for (let i = ids.length - 1; i >= 0; i--) {
    const checkpointId = ids[i] as number;
    if (checkpointId > latest) continue;
    if (checkpointId !== latest && (await folders.readText(checkpointId, METADATA)) === undefined) {
      await folders.deleteCheckpoint(checkpointId);
      continue;
    }
    kept++;
    if (kept > retained) await folders.deleteCheckpoint(checkpointId);
  }
}
