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
  /**
   * Keys whose `seq` values are not exactly 1…n, or where two copies of one record carry
   * different `seq` values: keyed state that counted a record twice (restored from an
   * unaligned checkpoint). A replay from an aligned checkpoint numbers a record the same again.
   */
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

/**
 * Counts what a reader of the committed output sees against ids 0 … records − 1: lost,
 * duplicated, phantom, and keys whose sequence numbers are not 1 … n. Files and tables feed it.
 */
export class RecordTally {
  private readonly records: number;
  /** Per id: 0 unseen, else the `seq` its first copy carried (−1 when it had none). */
  private readonly seqOf: Int32Array;
  private readonly perKey = new Map<number, { count: number; max: number; sum: number; renumbered: boolean }>();
  private duplicated = 0;
  private phantom = 0;

  constructor(records: number) {
    this.records = records;
    this.seqOf = new Int32Array(records);
  }

  add(record: { id?: unknown; key?: unknown; seq?: unknown } | undefined): void {
    const { id, key, seq } = record ?? {};
    if (typeof id !== "number" || !Number.isInteger(id) || id < 0 || id >= this.records) {
      this.phantom++;
      return;
    }
    const numbered = typeof key === "number" && typeof seq === "number";
    const first = this.seqOf[id] as number;
    if (first !== 0) {
      this.duplicated++;
      if (numbered && first !== seq) {
        const stats = this.perKey.get(key);
        if (stats) stats.renumbered = true;
      }
      return;
    }
    this.seqOf[id] = numbered ? seq : -1;
    if (numbered) {
      const stats = this.perKey.get(key) ?? { count: 0, max: 0, sum: 0, renumbered: false };
      stats.count++;
      stats.max = Math.max(stats.max, seq);
      stats.sum += seq;
      this.perKey.set(key, stats);
    }
  }

  result(files: number): OutputCheck {
    let committed = 0;
    for (let i = 0; i < this.records; i++) if (this.seqOf[i] !== 0) committed++;
    let keysWithBadSequence = 0;
    for (const { count, max, sum, renumbered } of this.perKey.values()) {
      if (renumbered || count !== max || sum !== (max * (max + 1)) / 2) keysWithBadSequence++;
    }
    return {
      committed,
      lost: this.records - committed,
      duplicated: this.duplicated,
      phantom: this.phantom,
      keysWithBadSequence,
      files,
    };
  }
}

/** Reads the committed output files and checks them against ids 0 … records − 1. */
export async function verifyOutput(dir: string, records: number): Promise<OutputCheck> {
  const tally = new RecordTally(records);
  let files = 0;
  for await (const file of visibleFiles(dir)) {
    files++;
    const lines = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
    for await (const line of lines) {
      if (line.length === 0) continue;
      try {
        tally.add(JSON.parse(line));
      } catch {
        tally.add(undefined);
      }
    }
  }
  return tally.result(files);
}
