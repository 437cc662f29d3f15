import { createReadStream } from "node:fs";
import { type FileHandle, mkdir, open, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStorageError } from "../errors.ts";
import type { ConditionalRecord } from "../shards/conditional-record.ts";
import { FileConditionalRecord } from "../shards/file-conditional-record.ts";
import { fsyncDirectory, isNotFound, writeAll, writeFileAtomic, writeFileDurable } from "../util/durable-fs.ts";
import {
  applyRetention,
  type CheckpointFolders,
  COMMITTED,
  inspectFolders,
  listCompleted,
  loadCheckpoint,
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

/** Options of {@link FileSystemCheckpointStorage}. @public */
export interface FileSystemCheckpointStorageOptions {
  /** How many completed checkpoints to keep; older ones are deleted. Default 3. */
  readonly retained?: number;
}

/**
 * Checkpoints as directories `chk-<id>/` holding one state file a task and a `_metadata`
 * file written last, atomically (temp file, fsync, rename, fsync dir). A crash while
 * writing checkpoint n leaves n without metadata, so n−1 stays the one recovery loads.
 * @public
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

  async markCommitted(checkpointId: number): Promise<void> {
    await writeFileDurable(join(this.checkpointDir(checkpointId), COMMITTED), "");
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

  load(checkpointId: number): Promise<RestoredCheckpoint | undefined> {
    return loadCheckpoint(this.folders, checkpointId);
  }

  logStore(namespace: string): LogStore {
    return new FileSystemLogStore(join(this.directory, "logs", encodeURIComponent(namespace)));
  }

  scoped(name: string): FileSystemCheckpointStorage {
    return new FileSystemCheckpointStorage(join(this.directory, safeName(name)), { retained: this.retained });
  }

  async scopes(): Promise<string[]> {
    try {
      const entries = await readdir(this.directory, { withFileTypes: true });
      return entries
        .filter((e) => e.isDirectory() && !CHECKPOINT_DIR.test(e.name) && e.name !== "logs" && !e.name.startsWith("_"))
        .map((e) => e.name);
    } catch (error) {
      if (isNotFound(error)) return [];
      throw error;
    }
  }

  async removeScope(name: string): Promise<void> {
    await rm(join(this.directory, safeName(name)), { recursive: true, force: true });
  }

  record<T>(name: string): ConditionalRecord<T> {
    return new FileConditionalRecord<T>(join(this.directory, `_${safeName(name)}`));
  }
}

/** A scope or record name: one path segment, never `.`, `..` or a separator. */
function safeName(name: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name))
    throw new CheckpointStorageError(`"${name}" cannot name a folder of checkpoint storage`);
  return name;
}

/** Text a log gathers before it is written: one write of this much, not one per batch. */
const WRITE_BEHIND_CHARS = 1 << 20;

/** A log open for appends: its file, text not written yet, and the write under way. */
interface OpenLog {
  readonly handle: FileHandle;
  pending: string[];
  pendingChars: number;
  /** The write under way; its failure is thrown by the next flush or sync. */
  writing: Promise<void> | undefined;
}

class FileSystemLogStore implements LogStore {
  private readonly openLogs = new Map<string, OpenLog>();
  private created = false;

  private readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  private async log(name: string): Promise<OpenLog> {
    let log = this.openLogs.get(name);
    if (!log) {
      if (!this.created) {
        await mkdir(this.dir, { recursive: true });
        this.created = true;
      }
      log = {
        handle: await open(join(this.dir, encodeURIComponent(name)), "a"),
        pending: [],
        pendingChars: 0,
        writing: undefined,
      };
      this.openLogs.set(name, log);
    }
    return log;
  }

  /**
   * Appends are gathered and written a megabyte at a time, one write under way while the next
   * text gathers: an awaited write per batch kept the sink waiting on the disk between batches.
   * Nothing is promised before sync: a log counts only once its checkpoint is durable.
   */
  async append(name: string, lines: readonly string[]): Promise<void> {
    if (lines.length === 0) return;
    const log = await this.log(name);
    const text = `${lines.join("\n")}\n`;
    log.pending.push(text);
    log.pendingChars += text.length;
    if (log.pendingChars >= WRITE_BEHIND_CHARS) await this.flush(log);
  }

  /** Waits for the write under way (throwing its failure) and starts writing what gathered since. */
  private async flush(log: OpenLog): Promise<void> {
    const before = log.writing;
    log.writing = undefined;
    await before;
    if (log.pending.length === 0) return;
    const text = log.pending.length === 1 ? (log.pending[0] as string) : log.pending.join("");
    log.pending = [];
    log.pendingChars = 0;
    const writing = writeAll(log.handle, text);
    // Thrown by the next flush or sync; meanwhile not an unhandled rejection.
    writing.catch(() => {});
    log.writing = writing;
  }

  async sync(name: string): Promise<void> {
    const log = await this.log(name);
    await this.flush(log);
    await log.writing;
    log.writing = undefined;
    await log.handle.sync();
    await log.handle.close();
    this.openLogs.delete(name);
    await fsyncDirectory(this.dir);
  }

  /** Closes a log's file once its write under way ended, however it ended; what gathered is dropped. */
  private async release(log: OpenLog | undefined): Promise<void> {
    if (!log) return;
    await log.writing?.catch(() => {});
    await log.handle.close();
  }

  /** Writes out what a log still gathers, if it is open, so a read sees every append. */
  private async written(name: string): Promise<void> {
    const log = this.openLogs.get(name);
    if (!log) return;
    await this.flush(log);
    await log.writing;
  }

  async *read(name: string): AsyncIterable<readonly string[]> {
    await this.written(name);
    // 64 KiB chunks, split into lines here: a commit decodes and sends a chunk's records while
    // it reads on, and a smaller chunk keeps fewer of them alive meanwhile.
    const stream = createReadStream(join(this.dir, encodeURIComponent(name)), {
      encoding: "utf8",
      highWaterMark: 1 << 16,
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
    await this.written(name);
    yield* createReadStream(join(this.dir, encodeURIComponent(name)), {
      highWaterMark: 1 << 20,
    }) as AsyncIterable<Buffer>;
  }

  async delete(name: string): Promise<void> {
    const log = this.openLogs.get(name);
    this.openLogs.delete(name);
    await this.release(log);
    await rm(join(this.dir, encodeURIComponent(name)), { force: true });
  }

  async close(): Promise<void> {
    const logs = [...this.openLogs.values()];
    this.openLogs.clear();
    await Promise.allSettled(logs.map((log) => this.release(log)));
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
