import type { Dirent } from "node:fs";
import { type FileHandle, link, mkdir, open, readdir, stat, truncate, unlink } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fsyncDirectory, isAlreadyExists, isNotFound, writeAll } from "@exactly/core/internal";
import { reachFault } from "@exactly/core/testing";
import { LineBuffer } from "../line-buffer.ts";
import {
  type LingeringFilter,
  type OpenPart,
  type PartDescriptor,
  PartExistsError,
  PartLostError,
  type RecoverableWriter,
} from "../recoverable-writer.ts";

const IN_PROGRESS = ".inprogress";

/**
 * Part files on local disk. In-progress data is a hidden file beside its target
 * (`.<name>.inprogress`), fsynced at pre-commit, published with link + unlink: unlike
 * rename, link never clobbers an existing file, so a replayed commit cannot overwrite
 * output. The directory is fsynced after publishing.
 */
export class LocalRecoverableWriter implements RecoverableWriter {
  readonly baseDirectory: string;

  constructor(baseDirectory: string) {
    this.baseDirectory = baseDirectory;
  }

  private finalPath(part: PartDescriptor): string {
    return join(this.baseDirectory, part.bucket, part.name);
  }

  private inProgressPath(part: PartDescriptor): string {
    return join(this.baseDirectory, part.bucket, `.${part.name}${IN_PROGRESS}`);
  }

  async openPart(part: PartDescriptor): Promise<OpenPart> {
    const path = part.visible ? this.finalPath(part) : this.inProgressPath(part);
    await mkdir(dirname(path), { recursive: true });
    // A visible part must never truncate output a crashed run published under the same name.
    return new LocalOpenPart(part, await open(path, part.visible ? "wx" : "w"));
  }

  async commit(part: PartDescriptor): Promise<void> {
    await this.publish(part, false);
  }

  async recoverAndCommit(part: PartDescriptor): Promise<void> {
    await this.publish(part, true);
  }

  private async publish(part: PartDescriptor, recovering: boolean): Promise<void> {
    if (part.visible) return;
    const length = part.length;
    if (length === undefined) throw new Error(`part ${part.name} was not closed for commit`);
    const source = this.inProgressPath(part);
    const target = this.finalPath(part);
    if (recovering) {
      try {
        // Bytes past the pre-committed length were never part of the checkpoint.
        if ((await stat(source)).size > length) await truncate(source, length);
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    }
    try {
      await link(source, target);
    } catch (error) {
      if (isAlreadyExists(error)) {
        const existing = await stat(target);
        if (existing.size !== length) {
          throw new PartExistsError(relative(this.baseDirectory, target));
        }
      } else if (isNotFound(error)) {
        const published = await stat(target).catch(() => undefined);
        if (published?.size !== length) {
          throw new PartLostError(part);
        }
        return; // published by an earlier commit, in-progress file already removed
      } else {
        throw error;
      }
    }
    // Published but the in-progress file is still there: a crash here must be harmless.
    reachFault("mid-commit");
    await unlink(source).catch((error) => {
      if (!isNotFound(error)) throw error;
    });
    await fsyncDirectory(dirname(target));
  }

  async abort(part: PartDescriptor): Promise<void> {
    if (part.visible) return; // already published: at-least-once keeps what it wrote
    await unlink(this.inProgressPath(part)).catch((error) => {
      if (!isNotFound(error)) throw error;
    });
  }

  /** Every file in the bucket tree as (bucket, file name); hidden directories are never buckets. */
  private async *files(dir = this.baseDirectory): AsyncGenerator<{ bucket: string; file: string; path: string }> {
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      if (isNotFound(error)) return;
      throw error;
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!entry.name.startsWith(".")) yield* this.files(path);
      } else if (entry.isFile()) {
        yield { bucket: relative(this.baseDirectory, dir), file: entry.name, path };
      }
    }
  }

  async abortLingering(
    partPrefix: string,
    parseSubtask: (name: string) => number | undefined,
    filter: LingeringFilter,
  ): Promise<string[]> {
    const removed: string[] = [];
    for await (const { bucket, file, path } of this.files()) {
      if (!file.startsWith(`.${partPrefix}`) || !file.endsWith(IN_PROGRESS)) continue;
      const name = file.slice(1, -IN_PROGRESS.length);
      const subtask = parseSubtask(name);
      if (subtask === undefined || !filter.ownsSubtaskIndex(subtask)) continue;
      if (filter.isReferenced({ bucket, name })) continue;
      await unlink(path).catch((error) => {
        if (!isNotFound(error)) throw error;
      });
      removed.push(join(bucket, file));
      reachFault("during-lingering-abort");
    }
    return removed;
  }

  async repairTornTails(
    partPrefix: string,
    parseSubtask: (name: string) => number | undefined,
    filter: LingeringFilter,
  ): Promise<string[]> {
    const repaired: string[] = [];
    for await (const { bucket, file, path } of this.files()) {
      if (!file.startsWith(partPrefix)) continue;
      const subtask = parseSubtask(file);
      if (subtask === undefined || !filter.ownsSubtaskIndex(subtask)) continue;
      const keep = await lengthUpToLastNewline(path);
      if (keep === undefined) continue;
      await truncate(path, keep);
      repaired.push(join(bucket, file));
    }
    return repaired;
  }
}

/** The length that ends at the file's last newline, or undefined if the file already ends with one. */
async function lengthUpToLastNewline(path: string): Promise<number | undefined> {
  const handle = await open(path, "r");
  try {
    const size = (await handle.stat()).size;
    const chunk = Buffer.alloc(64 * 1024);
    for (let end = size; end > 0; ) {
      const start = Math.max(0, end - chunk.length);
      const { bytesRead } = await handle.read(chunk, 0, end - start, start);
      const at = chunk.subarray(0, bytesRead).lastIndexOf(0x0a);
      if (at >= 0) return start + at + 1 === size ? undefined : start + at + 1;
      end = start;
    }
    return size === 0 ? undefined : 0;
  } finally {
    await handle.close();
  }
}

/**
 * An open local part writes behind: once one buffer has gathered enough, its bytes go to the
 * file while the next buffer fills, so the subtask builds lines while the thread pool writes
 * (demo job, 10,000,000 records, P=1: the loop waited on its writes about a fifth of the run).
 * At most one write is ever under way, so the data reaches the file in order, and what is
 * buffered is bounded by two buffers a part.
 */
class LocalOpenPart implements OpenPart {
  readonly descriptor: PartDescriptor;
  private readonly handle: FileHandle;
  /** The buffer lines are added to. */
  private lines = new LineBuffer();
  /** The other buffer: its bytes may be under way to the file. */
  private spare = new LineBuffer();
  private writing: Promise<void> | undefined;
  private writingBytes = 0;
  /** A failed write behind, thrown at the next append or flush. */
  private writeError: unknown;
  private written = 0;

  constructor(descriptor: PartDescriptor, handle: FileHandle) {
    this.descriptor = descriptor;
    this.handle = handle;
  }

  get length(): number {
    return this.written + this.writingBytes + this.lines.pending;
  }

  append(data: string): Promise<void> | undefined {
    return this.lines.add(data) ? this.writeBehind() : undefined;
  }

  /** Waits for the write under way (if any), then starts writing what has gathered. */
  private async writeBehind(): Promise<void> {
    await this.writeSettled();
    const data = this.lines.take();
    if (!data) return;
    // `data` is the full buffer's own bytes: lines go to the other one while they are written.
    [this.lines, this.spare] = [this.spare, this.lines];
    this.writingBytes = data.length;
    this.writing = writeAll(this.handle, data).then(
      () => {
        this.writing = undefined;
        this.writingBytes = 0;
        this.written += data.length;
      },
      (error: unknown) => {
        this.writing = undefined;
        this.writingBytes = 0;
        this.writeError = error;
      },
    );
  }

  private async writeSettled(): Promise<void> {
    if (this.writing) await this.writing;
    if (this.writeError !== undefined) throw this.writeError;
  }

  async flush(): Promise<void> {
    await this.writeSettled();
    const data = this.lines.take();
    if (!data) return;
    await writeAll(this.handle, data);
    this.written += data.length;
  }

  async closeForCommit(): Promise<PartDescriptor> {
    await this.flush();
    await this.handle.sync();
    await this.handle.close();
    return { ...this.descriptor, length: this.written };
  }

  async discard(): Promise<void> {
    this.lines.clear();
    // A write under way must end before the handle closes; its failure no longer matters.
    if (this.writing) await this.writing;
    await this.handle.close().catch(() => {});
  }
}
