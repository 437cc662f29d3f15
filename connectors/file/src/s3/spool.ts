/**
 * Local files that hold a part's bytes until they are uploaded. A writer spools into a
 * directory of its own, named by process id, so a later process can tell which directories
 * a crashed process left behind and remove them; the data in them is never needed after a
 * crash (what a checkpoint pre-committed is already on S3).
 */
import { randomBytes } from "node:crypto";
import { mkdir, readdir, rm } from "node:fs/promises";
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
    const match = SPOOL_DIR.exec(name);
    if (match && !isRunning(Number(match[1]))) await rm(join(root, name), { recursive: true, force: true });
  }
  const dir = join(root, `spool-${process.pid}-${randomBytes(4).toString("hex")}`);
  await mkdir(dir, { recursive: true });
  return dir;
}
