import { ConfigurationError } from "../errors.ts";

/**
 * Named points in a sink's checkpoint lifecycle where the crash tests kill the process.
 * A run arms at most one point through the environment, `EXACTLY_FAULT=<point>@<n>`:
 * the n-th time the process reaches that point it sends itself SIGKILL — a real crash,
 * not an exception. Unarmed, reaching a point costs one comparison.
 */
export const FAULT_POINTS = [
  /** A new transaction was begun (at open, or at a barrier after pre-commit). */
  "after-begin",
  /** A batch was written into the open transaction. */
  "mid-write",
  /** The transaction was pre-committed; the checkpoint is not yet acknowledged. */
  "after-pre-commit",
  /** The checkpoint's metadata is durable; no sink has been told to commit. */
  "after-checkpoint-durable",
  /** Inside a commit: after part of it (a connector calls this), or after a commit before its state is dropped. */
  "mid-commit",
  /** During recovery, after the first restored transaction was committed again. */
  "during-recovery-commit",
  /** During recovery, while lingering work is being aborted. */
  "during-lingering-abort",
] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number];

interface ArmedFault {
  readonly point: FaultPoint;
  readonly at: number;
  hits: number;
}

function parse(spec: string | undefined): ArmedFault | undefined {
  if (!spec) return undefined;
  const match = /^([a-z-]+)@(\d+)$/.exec(spec);
  const point = match?.[1] as FaultPoint | undefined;
  if (!match || !point || !FAULT_POINTS.includes(point)) {
    throw new ConfigurationError(
      "EXACTLY_FAULT",
      `must be <point>@<n> with a point of ${FAULT_POINTS.join(", ")}; got ${spec}`,
    );
  }
  return { point, at: Number(match[2]), hits: 0 };
}

let armed = parse(process.env.EXACTLY_FAULT);

/**
 * Arms `spec` (`<point>@<n>`, counted from now) in place of whatever was armed, or disarms
 * with undefined. The conformance suite's child arms a point only once some checkpoints
 * have completed, so the crash lands with restored state and pending work behind it.
 */
export function armFault(spec: string | undefined): void {
  armed = parse(spec);
}

/** Marks that the process reached `point`; kills it there if the test armed that point. */
export function reachFault(point: FaultPoint): void {
  if (armed?.point !== point) return;
  armed.hits++;
  if (armed.hits === armed.at) process.kill(process.pid, "SIGKILL");
}
