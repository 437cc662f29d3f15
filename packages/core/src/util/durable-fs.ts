import { type FileHandle, open, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";

/** fsync a directory so a create, rename or unlink inside it survives a machine crash. @internal */
export async function fsyncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes a file so that readers see either the old content or the whole new one. @internal */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  const handle = await open(tmp, "w");
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
  await fsyncDirectory(dirname(path));
}

/** Writes and fsyncs a new file (no atomic replace needed: the name is fresh). @internal */
export async function writeFileDurable(path: string, data: string | Uint8Array): Promise<void> {
  const handle = await open(path, "w");
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Writes all of `data` at the handle's position. One write(2) may write less than asked
 * without an error (a file system that fills up writes what fits and fails only the next
 * call), and `FileHandle.write` reports that only in `bytesWritten`: a caller that ignored
 * it would keep a file cut short in the middle of a record. This goes on until every byte
 * is written or a write fails.
 * @internal
 */
export async function writeAll(handle: FileHandle, data: string | Buffer): Promise<void> {
  let rest = typeof data === "string" ? Buffer.from(data) : data;
  while (rest.length > 0) {
    const { bytesWritten } = await handle.write(rest, 0, rest.length);
    rest = rest.subarray(bytesWritten);
  }
}

/** @internal */
export function isNotFound(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === "ENOENT";
}

/** @internal */
export function isAlreadyExists(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === "EEXIST";
}
