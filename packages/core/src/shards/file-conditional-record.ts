/**
 * The ConditionalRecord port on a file system (one machine, or a shared volume): each version
 * is a file `<sequence>.json` in the record's folder, made by `link(2)`ing a fully written
 * temp file to the next sequence number. `link` fails if the name exists, so of two writers
 * that read the same version exactly one makes the next; the highest sequence is the record.
 */
import { randomBytes } from "node:crypto";
import { link, mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { fsyncDirectory, isAlreadyExists, isNotFound, writeFileDurable } from "../util/durable-fs.ts";
import type { ConditionalRecord, VersionedValue } from "./conditional-record.ts";

const VERSION_FILE = /^(\d+)\.json$/;
/** Versions kept behind the newest, so a reader that listed just before a write still finds its file. */
const KEPT = 8;

/** @internal */
export class FileConditionalRecord<T> implements ConditionalRecord<T> {
  readonly directory: string;

  constructor(directory: string) {
    this.directory = directory;
  }

  describe(): string {
    return this.directory;
  }

  private async sequences(): Promise<number[]> {
    let names: string[];
    try {
      names = await readdir(this.directory);
    } catch (error) {
      if (isNotFound(error)) return [];
      throw error;
    }
    const sequences: number[] = [];
    for (const name of names) {
      const match = VERSION_FILE.exec(name);
      if (match) sequences.push(Number(match[1]));
    }
    return sequences.sort((a, b) => b - a);
  }

  async read(): Promise<VersionedValue<T> | undefined> {
    for (;;) {
      const [newest] = await this.sequences();
      if (newest === undefined) return undefined;
      try {
        const text = await readFile(join(this.directory, `${newest}.json`), "utf8");
        return { value: JSON.parse(text) as T, version: String(newest) };
      } catch (error) {
        // Pruned between the listing and the read: a newer version exists, list again.
        if (!isNotFound(error)) throw error;
      }
    }
  }

  async replace(expected: string | undefined, value: T): Promise<string | undefined> {
    const next = expected === undefined ? 1 : Number(expected) + 1;
    if (!Number.isSafeInteger(next) || next < 1) return undefined;
    // The version replaced must be the newest that exists: not one never written, or gone with its folder.
    if (expected !== undefined && (await this.sequences())[0] !== next - 1) return undefined;
    await mkdir(this.directory, { recursive: true });
    const tmp = join(this.directory, `.tmp-${process.pid}-${randomBytes(6).toString("hex")}`);
    const target = join(this.directory, `${next}.json`);
    await writeFileDurable(tmp, JSON.stringify(value));
    try {
      await link(tmp, target);
    } catch (error) {
      if (isAlreadyExists(error)) return undefined;
      throw error;
    } finally {
      await rm(tmp, { force: true });
    }
    // A writer whose `expected` was pruned long ago could still link its old number: it won
    // only if nothing newer exists.
    const sequences = await this.sequences();
    if ((sequences[0] ?? next) > next) {
      await rm(target, { force: true });
      return undefined;
    }
    await fsyncDirectory(this.directory);
    for (const old of sequences.slice(KEPT)) await rm(join(this.directory, `${old}.json`), { force: true });
    return String(next);
  }
}
