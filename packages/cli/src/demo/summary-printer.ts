import { join } from "node:path";
import { CHECKPOINT_DIR } from "./demo-job-config.ts";
import type { DemoSummary } from "./demo-options.ts";
import { DEMO_TARGETS } from "./targets/demo-targets.ts";

/** The summary as `exactly demo` prints it: the run's rows, then its target's, then the verdict. */
export function formatSummary(s: DemoSummary): string {
  const rows: Array<[string, string]> = [
    ["guarantee", s.guarantee],
    ["checkpointing", s.checkpointing],
    ["records in", String(s.records)],
    ["committed", String(s.committed)],
    ["lost", String(s.lost)],
    ["duplicated", String(s.duplicated)],
    ["phantom", String(s.phantom)],
    ["keyed state", s.keysWithBadSequence === 0 ? "consistent" : `${s.keysWithBadSequence} keys wrong`],
    ["checkpoints", String(s.checkpoints)],
    ["kills (SIGKILL)", `${killsLanded(s.kills, s.killsAsked)} (seed ${s.seed})`],
    [
      "recoveries",
      `${s.recoveries} (${s.restoredFromCheckpoint} from a checkpoint, ${s.recoveries - s.restoredFromCheckpoint} from the beginning)`,
    ],
    ...(s.resumed
      ? ([
          [
            "resumed",
            s.resumedFromCheckpoint === null
              ? "an earlier run in --out, which had no complete checkpoint: started over"
              : `an earlier run in --out, from its checkpoint ${s.resumedFromCheckpoint} (checked: the whole history)`,
          ],
        ] as Array<[string, string]>)
      : []),
    ["elapsed", `${s.elapsedSeconds.toFixed(1)} s`],
    ["records/s", `${s.recordsPerSecond}${s.ratePerSecond ? ` (source paced at ${s.ratePerSecond}/s)` : ""}`],
    ["peak RSS", `${s.peakRssMb} MB`],
    ["parallelism", `${s.parallelism} on ${s.workers === 1 ? "one event loop" : `${s.workers} worker threads`}`],
    ...(s.shards === undefined
      ? []
      : ([
          [
            "shards",
            `${s.shards} processes, rescaled to ${s.rescaledTo} (each restored its part of the old shards' checkpoints)`,
          ],
          [
            "zombie",
            `shard ${s.zombie?.shard} paused past its lease while a replacement took over, then resumed: ${
              s.zombie?.fenced ? "fenced (its attempt refused), nothing of it visible" : "NOT seen fenced"
            }`,
          ],
        ] as Array<[string, string]>)),
    ...DEMO_TARGETS[s.sink].rows(s),
    [
      "left behind",
      s.outRemoved
        ? `nothing: ${s.out} was removed after the check (--out <dir> or --keep keeps it)`
        : `${s.out} (its checkpoints: exactly inspect ${join(s.out, CHECKPOINT_DIR)})`,
    ],
  ];
  return formatRows(rows, verdict(s.ok, "every record committed exactly once", s.kills, s.killsAsked));
}

/** The kills row: the kills that landed, and the ones asked for when fewer landed. */
export function killsLanded(kills: number, asked: number): string {
  return kills < asked ? `${kills} of the ${asked} asked: the run ended before the others` : String(kills);
}

/**
 * The verdict line. An OK under fewer kills than asked says so: the run showed exactly once
 * under less than the user asked to see.
 */
export function verdict(ok: boolean, what: string, kills: number, asked: number): string {
  if (!ok) return "NOT EXACTLY ONCE";
  if (kills < asked) return `OK: ${what}, but under ${kills} of the ${asked} kills asked`;
  return `OK: ${what}`;
}

/** Rows as two aligned columns, then the verdict line: the shape of every demo's summary. */
export function formatRows(rows: ReadonlyArray<readonly [string, string]>, verdict: string): string {
  const width = Math.max(...rows.map(([k]) => k.length));
  return [...rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`), verdict].join("\n");
}
