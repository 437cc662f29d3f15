import { createReadStream } from "node:fs";
import { type FileHandle, mkdir, open, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStorageError } from "../errors.ts";
import { fsyncDirectory, isNotFound, writeAll, writeFileAtomic, writeFileDurable } from "../util/durable-fs.ts";
import {
  applyRetention,
  type CheckpointFolders,
  inspectFolders,
  listCompleted,
  loadLatest,
  METADATA,
} from "./checkpoint-folders.ts";
import type {
  CheckpointMetadata,
  CheckpointStorage,
  InspectedCheckpoint,
  LogStore,
  RestoredCheckpoint,
  StoredTaskState,
} from "./checkpoint-storage.ts";

const CHECKPOINT_DIR = /^chk-(\d+)$/;

export interface FileSystemCheckpointStorageOptions {
  /** How many completed checkpoints to keep; older ones are deleted. Default 3. */
  readonly retained?: number;
}

/**
 * Checkpoints as directories `chk-<id>/` holding one state file a task and a `_metadata`
 * file written last, atomically (temp file, fsync, rename, fsync dir). A crash while
 * writing checkpoint n leaves n without metadata, so n−1 stays the one recovery loads.
 */
export class FileSystemCheckpointStorage implements CheckpointStorage {
  readonly directory: string;
  private readonly retained: number;

  constructor(directory: string, options: FileSystemCheckpointStorageOptions = {}) {
    this.directory = directory;
    this.retained = options.retained ?? 3;
    if (!Number.isInteger(this.retained) || this.retained < 1) {
      throw new CheckpointStorageError(`retained must be a positive integer, got ${this.retained}`);
    }
  }

  private checkpointDir(checkpointId: number): string {
    return join(this.directory, `chk-${checkpointId}`);
  }

  private async checkpointIds(): Promise<number[]> {
    let names: string[];
    try {
      names = await readdir(this.directory);
    } catch (error) {
      if (isNotFound(error)) return [];
      throw error;
    }
    const ids: number[] = [];
    for (const name of names) {
      const match = CHECKPOINT_DIR.exec(name);
      if (match?.[1]) ids.push(Number(match[1]));
    }
    return ids.sort((a, b) => a - b);
  }

  async highestCheckpointId(): Promise<number> {
    const ids = await this.checkpointIds();
    return ids.at(-1) ?? 0;
  }

  async beginCheckpoint(checkpointId: number): Promise<void> {
    await mkdir(this.directory, { recursive: true });
    await mkdir(this.checkpointDir(checkpointId), { recursive: true });
    // The directory's existence reserves the id: fsync the parent so a reused id is impossible.
    await fsyncDirectory(this.directory);
  }

  async writeTaskState(checkpointId: number, taskKey: string, state: unknown): Promise<StoredTaskState> {
    const file = `${encodeURIComponent(taskKey)}.json`;
    const text = JSON.stringify(state);
    await writeFileDurable(join(this.checkpointDir(checkpointId), file), text);
    return { handle: file, bytes: Buffer.byteLength(text) };
  }

  async completeCheckpoint(metadata: CheckpointMetadata): Promise<void> {
    const dir = this.checkpointDir(metadata.checkpointId);
    await fsyncDirectory(dir);
    await writeFileAtomic(join(dir, METADATA), JSON.stringify(metadata));
    await applyRetention(this.folders, metadata.checkpointId, this.retained);
  }

  async discardCheckpoint(checkpointId: number): Promise<void> {
    const dir = this.checkpointDir(checkpointId);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      if (isNotFound(error)) return;
      throw error;
    }
    // Keep the (empty) directory: it still reserves the id.
    await Promise.all(names.map((name) => rm(join(dir, name), { force: true })));
  }

  /** The folder primitives the shared lifecycle code works on (checkpoint-folders.ts). */
  private readonly folders: CheckpointFolders = {
    ids: () => this.checkpointIds(),
    readText: async (checkpointId, name) => {
      try {
        return await readFile(join(this.checkpointDir(checkpointId), name), "utf8");
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    },
    deleteCheckpoint: (checkpointId) => rm(this.checkpointDir(checkpointId), { recursive: true, force: true }),
  };

  listCompleted(): Promise<CheckpointMetadata[]> {
    return listCompleted(this.folders);
  }

  inspect(): Promise<InspectedCheckpoint[]> {
    return inspectFolders(this.folders);
  }

  loadLatest(): Promise<RestoredCheckpoint | undefined> {
    return loadLatest(this.folders);
  }

  logStore(namespace: string): LogStore {
    return new FileSystemLogStore(join(this.directory, "logs", encodeURIComponent(namespace)));
  }
}

class FileSystemLogStore implements LogStore {
  private readonly handles = new Map<string, FileHandle>();
  private created = false;

  private readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  private async handle(name: string): Promise<FileHandle> {
    let handle = this.handles.get(name);
    if (!handle) {
      if (!this.created) {
        await mkdir(this.dir, { recursive: true });
        this.created = true;
      }
      handle = await open(join(this.dir, encodeURIComponent(name)), "a");
      this.handles.set(name, handle);
    }
    return handle;
  }

  async append(name: string, lines: readonly string[]): Promise<void> {
    if (lines.length === 0) return;
    const handle = await this.handle(name);
    await writeAll(handle, `${lines.join("\n")}\n`);
  }

  async sync(name: string): Promise<void> {
    const handle = await this.handle(name);
    await handle.sync();
    await handle.close();
    this.handles.delete(name);
    await fsyncDirectory(this.dir);
  }

  async *read(name: string): AsyncIterable<readonly string[]> {
    // 1 MiB chunks, split into lines here: a checkpoint's log is read at every commit.
    const stream = createReadStream(join(this.dir, encodeURIComponent(name)), {
      encoding: "utf8",
      highWaterMark: 1 << 20,
    });
    let rest = "";
    for await (const chunk of stream as AsyncIterable<string>) {
      const text = rest + chunk;
      const end = text.lastIndexOf("\n");
      if (end < 0) {
        rest = text;
        continue;
      }
      rest = text.slice(end + 1);
      const lines = text.slice(0, end).split("\n");
      yield lines.includes("") ? lines.filter((line) => line.length > 0) : lines;
    }
    if (rest.length > 0) yield [rest];
  }

  async *readBytes(name: string): AsyncIterable<Uint8Array> {
    yield* createReadStream(join(this.dir, encodeURIComponent(name)), {
      highWaterMark: 1 << 20,
    }) as AsyncIterable<Buffer>;
  }

  async delete(name: string): Promise<void> {
    const handle = this.handles.get(name);
    this.handles.delete(name);
    await handle?.close();
    await rm(join(this.dir, encodeURIComponent(name)), { force: true });
  }

  async close(): Promise<void> {
    const handles = [...this.handles.values()];
    this.handles.clear();
    await Promise.allSettled(handles.map((h) => h.close()));
  }

  async list(): Promise<string[]> {
    try {
      return (await readdir(this.dir)).map((n) => decodeURIComponent(n));
    } catch (error) {
      if (isNotFound(error)) return [];
      throw error;
    }
  }
}
