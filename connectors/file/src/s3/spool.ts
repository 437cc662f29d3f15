/**
 * Local files that hold a part's bytes until they are uploaded. A writer spools into a
 * directory of its own, named by process id, so a later process can tell which directories
 * a crashed process left behind and remove them: what a crashed process had not uploaded
 * is in no checkpoint. Once uploaded, a part's file moves to the retained copies
 * (`RetainedParts`), which outlive the process until the upload is completed or aborted.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SPOOL_DIR = /^spool-(\d+)-[0-9a-f]+$/;

export function defaultSpoolRoot(): string {
  return join(tmpdir(), "exactly-s3-spool");
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but is another user's.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Creates this writer's spool directory under `root`, removing those of processes that are gone. */
export async function createSpoolDirectory(root: string): Promise<string> {
  await mkdir(root, { recursive: true });
  for (const name of await readdir(root)) {
    // "retained" does not match: the copies of uploaded parts outlive their process.
    const match = SPOOL_DIR.exec(name);
    if (match && !isRunning(Number(match[1]))) await rm(join(root, name), { recursive: true, force: true });
  }
  const dir = join(root, `spool-${process.pid}-${randomBytes(4).toString("hex")}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

/**
 * Copies of the parts an open upload was given, kept on local disk until the upload is
 * completed or aborted, under `<root>/retained/<bucket and prefix hash>/`, which outlives
 * the process. They are needed only when the server lost parts of an upload that is still
 * open: MinIO removes the parts' metadata before it publishes the object, so a client that
 * dies during its completion can leave the upload open without its parts. A recommit then
 * uploads the missing parts again from here and checks that each gets the ETag the
 * checkpoint lists (the same bytes). What this costs: the disk of the part files not yet
 * committed, about a checkpoint interval's data.
 */
export class RetainedParts {
  private readonly dir: string;
  private made: Promise<void> | undefined;

  constructor(root: string, bucket: string, prefix: string) {
    const scope = createHash("sha256").update(`${bucket}\0${prefix}`).digest("hex").slice(0, 16);
    this.dir = join(root, "retained", scope);
  }

  /** The file name stem of an upload's copies: upload ids are long and not always file-name safe. */
  private stemOf(uploadId: string): string {
    return createHash("sha256").update(uploadId).digest("hex").slice(0, 32);
  }

  pathOf(uploadId: string, n: number): string {
    return join(this.dir, `${this.stemOf(uploadId)}-${n}`);
  }

  /** Moves an uploaded part's spool file here (the same file system: both are under the spool root). */
  async keep(spoolFile: string, uploadId: string, n: number): Promise<void> {
    this.made ??= mkdir(this.dir, { recursive: true }).then(() => undefined);
    await this.made;
    await rename(spoolFile, this.pathOf(uploadId, n));
  }

  /** Drops the copies of a completed or aborted upload: of `parts` when known, else every one. */
  async release(uploadId: string, parts?: readonly number[]): Promise<void> {
    if (parts) {
      await Promise.all(parts.map((n) => rm(this.pathOf(uploadId, n), { force: true })));
      return;
    }
    const stem = `${this.stemOf(uploadId)}-`;
    for (const name of await this.list()) if (name.startsWith(stem)) await rm(join(this.dir, name), { force: true });
  }

  /** The copies there are now; list them before listing the open uploads, for `sweep`. */
  async list(): Promise<string[]> {
    try {
      return await readdir(this.dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
  }

  /**
   * Drops the copies, among `listed`, of uploads not in `open`. `listed` was taken before the
   * open uploads were listed, so each copy in it belongs to an upload that existed by then:
   * one that is not open any more (completed, aborted, expired) will never need it.
   */
  async sweep(listed: readonly string[], open: ReadonlySet<string>): Promise<void> {
    const openStems = new Set([...open].map((id) => this.stemOf(id)));
    for (const name of listed) {
      if (!openStems.has(name.replace(/-\d+$/, ""))) await rm(join(this.dir, name), { force: true });
    }
  }
}
