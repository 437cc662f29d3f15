import { constants, type Dirent } from "node:fs";
import { type FileHandle, link, lstat, mkdir, open, readdir, realpath, truncate, unlink } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import { reachFault } from "@exactly/core/faults";
import { fsyncDirectory, isAlreadyExists, isNotFound, writeAll } from "@exactly/core/internal";
import { UnsafeBucketPathError } from "../bucket-assigner.ts";
import { LineBuffer } from "../line-buffer.ts";
import {
  type LingeringFilter,
  type OpenPart,
  type PartDescriptor,
  PartExistsError,
  PartLostError,
  PlantedFileError,
  type RecoverableWriter,
} from "../recoverable-writer.ts";

const IN_PROGRESS = ".inprogress";
/** The longest file name most file systems take (ext4, xfs, btrfs, tmpfs: 255 bytes). */
const MAX_NAME_BYTES = 255;
/** A new part's file: created by this call or not at all, and never through a symlink. */
const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Part files on local disk. In-progress data is a hidden file beside its target
 * (`.<name>.inprogress`), fsynced at pre-commit, published with link + unlink: unlike
 * rename, link never clobbers an existing file, so a replayed commit cannot overwrite
 * output. The directory is fsynced after publishing.
 *
 * Nothing planted in the output folder is followed: a part's file is created with O_EXCL and
 * O_NOFOLLOW, a recovered one is opened with O_NOFOLLOW, and a bucket directory must resolve
 * inside the base (a symlink out of it is refused). A file that already has a part's name is
 * ours only if it is the very file we wrote (the same inode, linked before a crash), never
 * because its length matches.
 */
export class LocalRecoverableWriter implements RecoverableWriter {
  readonly baseDirectory: string;
  /** The base with symlinks resolved (the base itself may be one): bucket directories resolve inside it. */
  private realBase: Promise<string> | undefined;

  constructor(baseDirectory: string) {
    this.baseDirectory = baseDirectory;
  }

  private resolvedBase(): Promise<string> {
    this.realBase ??= mkdir(this.baseDirectory, { recursive: true }).then(() => realpath(this.baseDirectory));
    // A failure (the base cannot be made) is tried again next time.
    this.realBase.catch(() => {
      this.realBase = undefined;
    });
    return this.realBase;
  }

  /**
   * Makes a bucket's directory one segment at a time, checking at each that it resolves
   * inside the base, so that a symlinked segment never has directories made, or parts
   * written, outside it.
   */
  private async bucketDirectory(bucket: string): Promise<string> {
    let dir = this.baseDirectory;
    await this.resolvedBase();
    for (const segment of bucket.split(sep)) {
      if (segment === "") continue;
      if (Buffer.byteLength(segment) > MAX_NAME_BYTES) {
        throw new UnsafeBucketPathError(
          bucket,
          `has a segment longer than a file name can be (${MAX_NAME_BYTES} bytes)`,
        );
      }
      dir = join(dir, segment);
      await mkdir(dir).catch((error) => {
        if (!isAlreadyExists(error)) throw error;
      });
      await this.requireInsideBase(dir, bucket);
    }
    return dir;
  }

  private async requireInsideBase(dir: string, bucket: string): Promise<void> {
    const base = await this.resolvedBase();
    const real = await realpath(dir);
    if (real !== base && !real.startsWith(base + sep)) {
      throw new UnsafeBucketPathError(bucket, `its directory resolves outside the base directory, to ${real}`);
    }
  }

  private finalPath(part: PartDescriptor): string {
    return join(this.baseDirectory, part.bucket, part.name);
  }

  private inProgressPath(part: PartDescriptor): string {
    return join(this.baseDirectory, part.bucket, `.${part.name}${IN_PROGRESS}`);
  }

  async openPart(part: PartDescriptor): Promise<OpenPart> {
    const path = part.visible ? this.finalPath(part) : this.inProgressPath(part);
    await this.bucketDirectory(part.bucket);
    try {
      // A visible part must never truncate output a crashed run published under the same name.
      return new LocalOpenPart(part, await open(path, CREATE_NEW, 0o644));
    } catch (error) {
      // An in-progress name is new to this run (its nonce): whatever holds it was planted.
      if (isAlreadyExists(error) && !part.visible) {
        throw new PlantedFileError(relative(this.baseDirectory, path), "something already exists at a new part's path");
      }
      throw error;
    }
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
    await this.requireInsideBase(dirname(target), part.bucket).catch((error) => {
      throw isNotFound(error) ? new PartLostError(part, "has no bucket directory any more") : error;
    });
    const ours = await this.inProgressFile(source, recovering ? length : undefined);
    try {
      await link(source, target);
    } catch (error) {
      if (isAlreadyExists(error)) {
        // Ours only if it is the file we wrote, linked by an earlier commit that did not get to unlink it.
        const existing = await lstat(target);
        if (!ours || existing.ino !== ours.ino || existing.dev !== ours.dev) {
          throw new PartExistsError(
            relative(this.baseDirectory, target),
            `another file has that name; this part's data is kept in ${relative(this.baseDirectory, source)}`,
          );
        }
      } else if (isNotFound(error)) {
        // Published by an earlier commit, in-progress file already removed: the name is this run's own (its nonce).
        const published = await lstat(target).catch(() => undefined);
        if (!published?.isFile() || published.size !== length) {
          throw new PartLostError(part);
        }
        return;
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

  /**
   * The in-progress file's identity, or undefined if it is gone; refuses anything but a
   * regular file. When recovering, bytes past the pre-committed length are cut off: they were
   * never part of the checkpoint.
   */
  private async inProgressFile(
    source: string,
    recoveredLength?: number,
  ): Promise<{ ino: number; dev: number } | undefined> {
    let handle: FileHandle;
    try {
      handle = await open(
        source,
        (recoveredLength === undefined ? constants.O_RDONLY : constants.O_RDWR) | constants.O_NOFOLLOW,
      );
    } catch (error) {
      if (isNotFound(error)) return undefined;
      if ((error as NodeJS.ErrnoException).code === "ELOOP") {
        throw new PlantedFileError(relative(this.baseDirectory, source), "the in-progress file is a symlink");
      }
      throw error;
    }
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) {
        throw new PlantedFileError(relative(this.baseDirectory, source), "the in-progress file is not a regular file");
      }
      if (recoveredLength !== undefined && stats.size > recoveredLength) await handle.truncate(recoveredLength);
      return { ino: stats.ino, dev: stats.dev };
    } finally {
      await handle.close();
    }
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

  /** The in-progress files of parts named `<partPrefix>…`: (bucket, part name, its file). */
  async *inProgressParts(partPrefix: string): AsyncGenerator<{ bucket: string; name: string; path: string }> {
    for await (const { bucket, file, path } of this.files()) {
      if (!file.startsWith(`.${partPrefix}`) || !file.endsWith(IN_PROGRESS)) continue;
      yield { bucket, name: file.slice(1, -IN_PROGRESS.length), path };
    }
  }

  async abortLingering(
    partPrefix: string,
    parseSubtask: (name: string) => number | undefined,
    filter: LingeringFilter,
  ): Promise<string[]> {
    const removed: string[] = [];
    for await (const { bucket, name, path } of this.inProgressParts(partPrefix)) {
      const file = `.${name}${IN_PROGRESS}`;
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
