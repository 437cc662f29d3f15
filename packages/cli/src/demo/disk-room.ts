/**
 * Whether a demo's output fits on the disk it goes to, checked before anything is made: a run
 * of `--records` at `--rate` that fills the disk fails late, and leaves the disk full for every
 * other program on it until someone finds the directory.
 */
import { statfs } from "node:fs/promises";
import { dirname } from "node:path";
import { ConfigurationError } from "@exactly/core";

/** The demo job's speed unpaced (`--rate 0`), records/s: what a kill can make it write again. */
export const UNPACED_RECORDS_PER_SECOND = 500_000;

/** Room for the checkpoints (1,024 keys' counters, a few checkpoints kept) and the marker file. */
export const CHECKPOINT_ROOM_BYTES = 64 * 1024 * 1024;

export interface DiskNeed {
  readonly records: number;
  /** Bytes one record takes in the output, its longest line (the target's `outBytesPerRecord`). */
  readonly bytesPerRecord: number;
  /** Records/s of the source; undefined when unpaced. */
  readonly ratePerSecond: number | undefined;
  /** The rate is --rate's, not the pace the demo picked for its kills. */
  readonly rateGiven: boolean;
  readonly kills: number;
  readonly checkpointIntervalMs: number;
  /** At-least-once output keeps what each kill made the job write again; exactly-once discards it. */
  readonly keepsReplays: boolean;
}

/** Bytes the output of a run takes at most: every record once, what kills made it write again, and the checkpoints. */
export function bytesNeeded(need: DiskNeed, records = need.records): number {
  // A kill replays what was read since the last complete checkpoint: up to two intervals (the
  // one being read and the one being completed) at the source's rate, which no pace lifts
  // above the job's own speed.
  const rate = Math.min(need.ratePerSecond ?? UNPACED_RECORDS_PER_SECOND, UNPACED_RECORDS_PER_SECOND);
  const replayed = Math.min(records, Math.ceil((rate * 2 * need.checkpointIntervalMs) / 1000));
  // Exactly once, a replayed attempt's parts are discarded on recovery: one replay is on the disk at most.
  const again = need.keepsReplays ? replayed * Math.max(1, need.kills) : replayed;
  return (records + again) * need.bytesPerRecord + CHECKPOINT_ROOM_BYTES;
}

/**
 * Refuses a run whose output would not fit in the space free at `dir` (or at its nearest
 * existing parent, for an --out still to be made), naming --records and --rate and the most
 * records that fit.
 */
export async function checkDiskRoom(dir: string, need: DiskNeed): Promise<void> {
  const at = await nearestExisting(dir);
  const { bavail, bsize } = await statfs(at);
  const free = bavail * bsize;
  const needed = bytesNeeded(need);
  if (needed <= free) return;
  let fit = 0;
  for (let low = 0, high = need.records; low <= high; ) {
    const middle = Math.floor((low + high) / 2);
    if (bytesNeeded(need, middle) <= free) {
      fit = middle;
      low = middle + 1;
    } else high = middle - 1;
  }
  const rate =
    need.ratePerSecond === undefined
      ? "unpaced (--rate 0)"
      : need.rateGiven
        ? `at --rate ${need.ratePerSecond}`
        : `at the pace picked for the kills (${need.ratePerSecond}/s; --rate sets it)`;
  throw new ConfigurationError(
    "--records",
    `${need.records} records ${rate} need about ${gigabytes(needed)} at ${at} (${need.bytesPerRecord} bytes a record${need.kills > 0 ? `, with what --kills ${need.kills} may write again` : ""}) and ${gigabytes(free)} is free there: at most ${fit} records fit; give fewer, or --out on a larger disk`,
  );
}

async function nearestExisting(dir: string): Promise<string> {
  for (let path = dir; ; path = dirname(path)) {
    try {
      await statfs(path);
      return path;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if ((code !== "ENOENT" && code !== "ENOTDIR") || dirname(path) === path) throw error;
    }
  }
}

function gigabytes(bytes: number): string {
  return `${(bytes / 1e9).toFixed(1)} GB`;
}
