import { ConfigurationError } from "../errors.ts";

/**
 * How barriers pass a task with several inputs (Flink's `CheckpointingMode`).
 *
 * - `"exactly-once"` (the default): barriers are aligned. An input that delivered barrier n
 *   waits until every input has, so each checkpoint's state holds exactly the records before
 *   it, and a restore replays exactly the rest.
 * - `"at-least-once"`: no alignment. A task keeps reading the inputs that delivered barrier n
 *   and snapshots once n has come on all of them, so no input waits for a slow one (lower
 *   latency under skew). Records after n on a fast input are in n's state and are replayed
 *   after a restore from n: keyed state counts them twice. A sink with the EXACTLY_ONCE
 *   guarantee refuses to start in such a job.
 *
 * With one input per task (a job of forward edges only) both modes behave the same.
 * @public
 */
export type CheckpointingMode = "exactly-once" | "at-least-once";

export function requireCheckpointingMode(value: unknown): CheckpointingMode {
  if (value === "exactly-once" || value === "at-least-once") return value;
  throw new ConfigurationError(
    "checkpointing",
    `must be "exactly-once" or "at-least-once", got ${JSON.stringify(value)}`,
  );
}
