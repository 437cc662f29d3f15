import { writeSync } from "node:fs";
import { ConfigurationError } from "../errors.ts";

/**
 * Named points in a sink's checkpoint lifecycle where the crash tests kill the process.
 * A run arms at most one point through the environment, `EXACTLY_FAULT=<point>@<n>`:
 * the n-th time the process reaches that point it sends itself SIGKILL — a real crash,
 * not an exception. Unarmed, reaching a point costs one comparison.
 *
 * With `EXACTLY_FAULT_ACTION=hold:<ms>` the process is not killed there: it says so on
 * stderr (`exactly-fault: holding at <point>@<n>`) and stops dead for `<ms>`, every thread
 * of its event loop included, so a test can fail a server at that exact moment (SIGKILL the
 * broker between pre-commit and commit) and let the job meet the outage when it goes on.
 * With `EXACTLY_FAULT_ACTION=stop` it sends itself SIGSTOP there (`exactly-fault: stopped at
 * …`), and goes on from that very point when the test sends SIGCONT: a zombie owner.
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
/**
 * Points of the runtime rather than of a sink, which the conformance suite does not visit:
 * a sharded job's checkpoint with its metadata written and not yet named by the shard's
 * head (shards/shard-checkpoint-storage.ts), where a paused owner shows what the head fences.
 */
export const RUNTIME_FAULT_POINTS = ["before-checkpoint-head"] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number] | (typeof RUNTIME_FAULT_POINTS)[number];
const ALL_POINTS: readonly string[] = [...FAULT_POINTS, ...RUNTIME_FAULT_POINTS];

interface ArmedFault {
  readonly point: FaultPoint;
  readonly at: number;
  hits: number;
}

function parse(spec: string | undefined): ArmedFault | undefined {
  if (!spec) return undefined;
  const match = /^([a-z-]+)@(\d+)$/.exec(spec);
  const point = match?.[1] as FaultPoint | undefined;
  if (!match || !point || !ALL_POINTS.includes(point)) {
    throw new ConfigurationError(
      "EXACTLY_FAULT",
      `must be <point>@<n> with a point of ${ALL_POINTS.join(", ")}; got ${spec}`,
    );
  }
  return { point, at: Number(match[2]), hits: 0 };
}

let armed = parse(process.env.EXACTLY_FAULT);

function parseAction(spec: string | undefined): { hold: number } | "stop" | undefined {
  if (!spec || spec === "kill") return undefined;
  if (spec === "stop") return "stop";
  const match = /^hold:(\d+)$/.exec(spec);
  if (!match) throw new ConfigurationError("EXACTLY_FAULT_ACTION", `must be kill, stop or hold:<ms>; got ${spec}`);
  return { hold: Number(match[1]) };
}

const action = parseAction(process.env.EXACTLY_FAULT_ACTION);

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
  if (armed.hits !== armed.at) return;
  if (!action) {
    process.kill(process.pid, "SIGKILL");
    return;
  }
  if (action === "stop") {
    writeSync(2, `exactly-fault: stopped at ${point}@${armed.at}\n`);
    process.kill(process.pid, "SIGSTOP");
    return;
  }
  writeSync(2, `exactly-fault: holding at ${point}@${armed.at}\n`);
  // Synchronous on purpose: nothing of this process moves until the test has done its part.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, action.hold);
}
