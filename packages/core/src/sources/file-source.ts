import { type FileHandle, open, readdir, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Batch, RecordPosition } from "../records.ts";
import { ownsSplit, type Source, type SourceReader, type SourceReaderContext } from "./source.ts";

/** Options of {@link FileSource}. @public */
export interface FileSourceOptions {
  readonly name?: string;
  /** Files to read, or directories whose visible files are read (in name order). */
  readonly paths: readonly string[];
}

const CHUNK = 64 * 1024;
const NEWLINE = 0x0a;

/**
 * Newline-delimited records from files, each file one split, the byte offset of the next
 * line as its position. Records are the lines as strings; `map` them to parse.
 * @public
 */
export class FileSource implements Source<string> {
  readonly name: string;
  readonly bounded = true;
  readonly paths: readonly string[];

  constructor(options: FileSourceOptions) {
    this.name = options.name ?? "file";
    this.paths = options.paths.map((p) => resolve(p));
  }

  createReader(context: SourceReaderContext): SourceReader<string> {
    return new FileReader(this, context);
  }
}

interface FileSplit {
  readonly path: string;
  offset: number;
  handle: FileHandle | undefined;
  /** Bytes read past `offset` but not yet emitted as a whole line. */
  pending: Buffer;
  eof: boolean;
}

class FileReader implements SourceReader<string> {
  private splits: FileSplit[] = [];
  private readonly source: FileSource;
  private readonly context: SourceReaderContext;

  constructor(source: FileSource, context: SourceReaderContext) {
    this.source = source;
    this.context = context;
  }

  async open(): Promise<void> {
    const files: string[] = [];
    for (const path of this.source.paths) {
      if ((await stat(path)).isDirectory()) {
        const names = (await readdir(path)).filter((n) => !n.startsWith(".")).sort();
        for (const name of names) files.push(join(path, name));
      } else {
        files.push(path);
      }
    }
    files.sort();
    this.splits = files
      .filter((_, index) => ownsSplit(index, this.context))
      .map((path) => {
        const restored = this.context.restoredPositions?.get(path);
        return {
          path,
          offset: typeof restored === "number" ? restored : 0,
          handle: undefined,
          pending: Buffer.alloc(0),
          eof: false,
        };
      });
  }

  async poll(maxRecords: number): Promise<Batch<string> | null> {
    const split = this.splits.find((s) => !s.eof || s.pending.length > 0);
    if (!split) return null;
    split.handle ??= await open(split.path, "r");
    const values: string[] = [];
    const positions: RecordPosition[] = [];
    while (values.length < maxRecords) {
      const newline = split.pending.indexOf(NEWLINE);
      if (newline >= 0) {
        values.push(split.pending.subarray(0, newline).toString("utf8"));
        positions.push({ source: this.source.name, split: split.path, offset: split.offset });
        split.offset += newline + 1;
        split.pending = split.pending.subarray(newline + 1);
        continue;
      }
      if (split.eof) {
        if (split.pending.length > 0) {
          // A last line without a trailing newline is still a record.
          values.push(split.pending.toString("utf8"));
          positions.push({ source: this.source.name, split: split.path, offset: split.offset });
          split.offset += split.pending.length;
          split.pending = Buffer.alloc(0);
        }
        await split.handle.close();
        split.handle = undefined;
        break;
      }
      const chunk = Buffer.allocUnsafe(CHUNK);
      const { bytesRead } = await split.handle.read(chunk, 0, CHUNK, split.offset + split.pending.length);
      if (bytesRead === 0) split.eof = true;
      else split.pending = Buffer.concat([split.pending, chunk.subarray(0, bytesRead)]);
    }
    return { values, positions, timestamps: undefined };
  }

  snapshotPositions(): Record<string, unknown> {
    const positions: Record<string, unknown> = {};
    for (const split of this.splits) positions[split.path] = split.offset;
    return positions;
  }

  async close(): Promise<void> {
    for (const split of this.splits) await split.handle?.close();
  }
}
