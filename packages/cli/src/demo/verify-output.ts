import { createReadStream } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";

export interface OutputCheck {
  /** Distinct expected ids found. */
  readonly committed: number;
  readonly lost: number;
  /** Lines whose id had been seen already. */
  readonly duplicated: number;
  /** Lines that are not a record of this run (unparsable, or an id never produced). */
  readonly phantom: number;
  /** Keys whose `seq` values are not exactly 1…n (keyed state replayed wrongly). */
  readonly keysWithBadSequence: number;
  readonly files: number;
}

/** Every visible file under `dir`: what a reader of committed output sees. */
export async function* visibleFiles(dir: string): AsyncGenerator<string> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.name.startsWith(".")) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* visibleFiles(path);
    else if (entry.isFile()) yield path;
  }
}

/** Reads the committed output and checks it against ids 0 … records − 1. */
export async function verifyOutput(dir: string, records: number): Promise<OutputCheck> {
  const seen = new Uint8Array(records);
  const perKey = new Map<number, { count: number; max: number; sum: number }>();
  let duplicated = 0;
  let phantom = 0;
  let files = 0;
  for await (const file of visibleFiles(dir)) {
    files++;
    const lines = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
    for await (const line of lines) {
      if (line.length === 0) continue;
      let record: { id?: unknown; key?: unknown; seq?: unknown };
      try {
        record = JSON.parse(line);
      } catch {
        phantom++;
        continue;
      }
      const { id, key, seq } = record;
      if (typeof id !== "number" || !Number.isInteger(id) || id < 0 || id >= records) {
        phantom++;
        continue;
      }
      if (seen[id] === 1) {
        duplicated++;
        continue;
      }
      seen[id] = 1;
      if (typeof key === "number" && typeof seq === "number") {
        const stats = perKey.get(key) ?? { count: 0, max: 0, sum: 0 };
        stats.count++;
        stats.max = Math.max(stats.max, seq);
        stats.sum += seq;
        perKey.set(key, stats);
      }
    }
  }
  let committed = 0;
  for (let i = 0; i < records; i++) committed += seen[i] as number;
  let keysWithBadSequence = 0;
  for (const { count, max, sum } of perKey.values()) {
    if (count !== max || sum !== (max * (max + 1)) / 2) keysWithBadSequence++;
  }
  return { committed, lost: records - committed, duplicated, phantom, keysWithBadSequence, files };
}
