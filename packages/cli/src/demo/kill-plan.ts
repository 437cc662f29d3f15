import { seededRandom } from "@exactly/core/internal";

export interface PlannedKill {
  /** Killed once the job has read this many records... */
  readonly atRecord: number;
  /** ...and this many milliseconds more have passed. */
  readonly delayMs: number;
}

/**
 * Where the kills land: K points of read progress, spread at random over 5 %–95 % of the
 * records, each with a small random delay. Progress rewinds to the restored checkpoint
 * after each kill, so every point is reached and all K kills happen.
 */
export function planKills(kills: number, records: number, seed: number): PlannedKill[] {
  const random = seededRandom(seed);
  const points = Array.from({ length: kills }, () => ({
    atRecord: Math.floor(records * (0.05 + 0.9 * random())),
    delayMs: Math.floor(random() * 40),
  }));
  return points.sort((a, b) => a.atRecord - b.atRecord);
}
