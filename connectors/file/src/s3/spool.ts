/**
 * Local files that hold a part's bytes until they are uploaded. A writer spools into a
 * directory of its own, named by process id, so a later process can tell which directories
 * a crashed process left behind and remove them: what a crashed process had not uploaded
 * is in no checkpoint. Once uploaded, a part's file moves to the retained copies
 * (`RetainedParts`), which outlive the process until the upload is completed or aborted.
 *
 * The spool holds the records' data, so it is private: the root is a directory of ours that
 * no one else can write to (mode 0700 when we make it), never reached through a symlink
 * someone planted in the shared temp directory, and every folder and file in it is ours alone
 * (0700, 0600). The root's name is fixed per user so that a later process finds what a
 * crashed one left; someone who makes it first gets a refusal, never our data.
 */

import { createHash, randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { type FileHandle, lstat, mkdir, open, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigurationError } from "@exactly/core";

const SPOOL_DIR = /^spool-(\d+)-[0-9a-f]+$/;
/** A spool file is made by this call or not at all, never through a symlink, and readable by us alone. */
const CREATE_PRIVATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** `<os tmpdir>/exactly-s3-spool-<uid>`: one per user, so users never share one. */
export function defaultSpoolRoot(): string {
  return join(tmpdir(), `exactly-s3-spool-${process.getuid?.() ?? "user"}`);
}

export function openSpoolFile(path: string): Promise<FileHandle> {
  return open(path, CREATE_PRIVATE, 0o600);
}

/**
 * Makes the spool root if it is missing and checks that it is private: a directory we own
 * that no one else can write to. The default root (in the shared temp directory) must not be
 * a symlink; a configured one may be, to a directory that passes the same checks.
 */
async function requirePrivateRoot(root: string, configured: boolean): Promise<void> {
  await mkdir(root, { recursive: configured, mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "EEXIST") throw error;
  });
  const refuse = (reason: string) =>
    new ConfigurationError(
      "spoolDirectory",
      `${root} ${reason}: the spool holds the records' data, so it must be a directory of ours that others cannot write to`,
    );
  const link = await lstat(root);
  if (link.isSymbolicLink() && !configured) throw refuse("is a symlink");
  const dir = link.isSymbolicLink() ? await stat(root) : link;
  if (!dir.isDirectory()) throw refuse("is not a directory");
  const uid = process.getuid?.();
  if (uid !== undefined && dir.uid !== uid) throw refuse(`belongs to user ${dir.uid}, not to us (${uid})`);
  if ((dir.mode & 0o022) !== 0) throw refuse(`can be written by others (mode ${(dir.mode & 0o777).toString(8)})`);
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

/**
 * Creates this writer's spool directory under `root`, removing those of processes that are
 * gone. `configured`: the root was given as `spoolDirectory` (else it is the default).
 */
export async function createSpoolDirectory(root: string, { configured }: { configured: boolean }): Promise<string> {
  await requirePrivateRoot(root, configured);
  for (const name of await readdir(root)) {
    // "retained" does not match: the copies of uploaded parts outlive their process.
    const match = SPOOL_DIR.exec(name);
    if (match && !isRunning(Number(match[1]))) await rm(join(root, name), { recursive: true, force: true });
  }
  const dir = join(root, `spool-${process.pid}-${randomBytes(4).toString("hex")}`);
  await mkdir(dir, { mode: 0o700 });
  return dir;
}

/**
 * Copies of the parts an open upload was given, kept on local disk until the upload is
 * completed or aborted, under `<root>/retained/<server, bucket and prefix hash>/`, which
 * outlives the process. A sink sweeps the copies of its folder whose uploads its server no
 * longer lists, so the folder is one server's: a sink of the same bucket and prefix on
 * another server lists none of this server's uploads, and would sweep every copy. The copies
 * are needed only when the server lost parts of an upload that is still open: MinIO removes
 * the parts' metadata before it publishes the object, so a client that dies during its
 * completion can leave the upload open without its parts. A recommit then
 * uploads the missing parts again from here and checks that each gets the ETag the
 * checkpoint lists (the same bytes). What this costs: the disk of the part files not yet
 * committed, about a checkpoint interval's data.
 *
 * Every upload this machine opened is recorded here too, by key and id (`<stem>.upload`),
 * until it is completed or aborted: a listing of the whole bucket is not proof that an upload
 * is gone (MinIO answers it from memory, which a restart of the server empties, so it names
 * none of the uploads made before the restart). So a sweep asks the server about each
 * upload the listing left out before it drops its copies, and lingering uploads this
 * machine opened are found here when the server's listing forgot them.
 */
export class RetainedParts {
  private readonly dir: string;
  private made: Promise<void> | undefined;
  /** Resolves once the spool root has passed its checks (and our spool directory is made). */
  private readonly rootChecked: () => Promise<unknown>;

  constructor(
    root: string,
    endpoint: string | undefined,
    bucket: string,
    prefix: string,
    rootChecked: () => Promise<unknown>,
  ) {
    // Without an endpoint (AWS) the folder is the one it was before servers were told apart.
    const server = endpoint === undefined ? "" : `${endpoint.replace(/\/+$/, "")}\0`;
    const scope = createHash("sha256").update(`${server}${bucket}\0${prefix}`).digest("hex").slice(0, 16);
    this.dir = join(root, "retained", scope);
    this.rootChecked = rootChecked;
  }

  /** The file name stem of an upload's copies: upload ids are long and not always file-name safe. */
  private stemOf(uploadId: string): string {
    return createHash("sha256").update(uploadId).digest("hex").slice(0, 32);
  }

  pathOf(uploadId: string, n: number): string {
    return join(this.dir, `${this.stemOf(uploadId)}-${n}`);
  }

  private uploadFileOf(uploadId: string): string {
    return join(this.dir, `${this.stemOf(uploadId)}${UPLOAD_FILE}`);
  }

  private async ready(): Promise<void> {
    this.made ??= this.rootChecked().then(() =>
      mkdir(this.dir, { recursive: true, mode: 0o700 }).then(() => undefined),
    );
    await this.made;
  }

  /**
   * Notes an upload as it is created, before any part of it is kept: its key and id stay
   * here until it is completed or aborted, so that this machine can find it again when the
   * server's listing does not name it.
   */
  async record(upload: RetainedUpload): Promise<void> {
    await this.ready();
    await writeUploadFile(this.uploadFileOf(upload.uploadId), upload);
  }

  /** The uploads recorded here and not yet released, whatever process recorded them. */
  async recorded(): Promise<RetainedUpload[]> {
    const uploads: RetainedUpload[] = [];
    for (const name of await this.list()) {
      if (!name.endsWith(UPLOAD_FILE)) continue;
      const upload = await readUploadFile(join(this.dir, name));
      if (upload) uploads.push(upload);
    }
    return uploads;
  }

  /** Moves an uploaded part's spool file here (the same file system: both are under the spool root). */
  async keep(spoolFile: string, uploadId: string, n: number): Promise<void> {
    await this.ready();
    await rename(spoolFile, this.pathOf(uploadId, n));
  }

  /** Drops the copies of a completed or aborted upload (`parts` when only those were kept), and its record. */
  async release(uploadId: string, parts?: readonly number[]): Promise<void> {
    await this.rootChecked();
    if (parts) {
      await Promise.all(parts.map((n) => rm(this.pathOf(uploadId, n), { force: true })));
      await rm(this.uploadFileOf(uploadId), { force: true });
      return;
    }
    const stem = this.stemOf(uploadId);
    for (const name of await this.list())
      if (stemOfName(name) === stem) await rm(join(this.dir, name), { force: true });
  }

  /** The copies there are now; list them before listing the open uploads, for `sweep`. */
  async list(): Promise<string[]> {
    await this.rootChecked();
    try {
      return await readdir(this.dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
  }

  /**
   * Drops the copies, among `listed`, of uploads that are gone (completed, aborted, expired):
   * those will never need them. `listed` was taken before the open uploads were listed, so
   * each copy in it belongs to an upload that existed by then. An upload the listing did not
   * name (`open`) is gone only when `isGone` says so for that upload; copies kept without
   * their upload's key (by an older version) go on the listing's word alone.
   */
  async sweep(
    listed: readonly string[],
    open: ReadonlySet<string>,
    isGone: (upload: RetainedUpload) => Promise<boolean>,
  ): Promise<void> {
    const openStems = new Set([...open].map((id) => this.stemOf(id)));
    const byStem = new Map<string, string[]>();
    for (const name of listed) {
      const stem = stemOfName(name);
      if (!openStems.has(stem)) byStem.set(stem, [...(byStem.get(stem) ?? []), name]);
    }
    for (const [stem, names] of byStem) {
      const upload = await readUploadFile(join(this.dir, `${stem}${UPLOAD_FILE}`));
      if (upload && !(await isGone(upload))) continue;
      for (const name of names) await rm(join(this.dir, name), { force: true });
    }
  }
}

/** The key and id of an upload this machine opened. */
export interface RetainedUpload {
  readonly key: string;
  readonly uploadId: string;
}

const UPLOAD_FILE = ".upload";

/** The upload stem of a retained file's name: `<stem>-<part>` or `<stem>.upload`. */
function stemOfName(name: string): string {
  return name.endsWith(UPLOAD_FILE) ? name.slice(0, -UPLOAD_FILE.length) : name.replace(/-\d+$/, "");
}

async function writeUploadFile(path: string, upload: RetainedUpload): Promise<void> {
  const handle = await openSpoolFile(path);
  try {
    await handle.writeFile(JSON.stringify({ key: upload.key, uploadId: upload.uploadId }));
  } finally {
    await handle.close();
  }
}

async function readUploadFile(path: string): Promise<RetainedUpload | undefined> {
  try {
    const parsed = JSON.parse(await readFile(path, "utf8")) as Partial<RetainedUpload>;
    return typeof parsed.key === "string" && typeof parsed.uploadId === "string"
      ? { key: parsed.key, uploadId: parsed.uploadId }
      : undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT" || error instanceof SyntaxError) return undefined;
    throw error;
  }
}
