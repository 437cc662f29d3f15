/**
 * `exactly lingering kafka|postgres|s3|file`: the work a sink left open in its external
 * system (Kafka transactions, prepared Postgres transactions, S3 multipart uploads,
 * in-progress local part files) that no checkpoint will commit, with its age; `--abort`
 * ends it. For a job that is not running, or
 * that was killed and will not be restarted: a running job's open transaction is in no
 * complete checkpoint yet, and aborting it fails the job (it restarts and replays, losing
 * nothing, but that is an outage). docs/operating.md has the procedure.
 *
 * What a checkpoint at `--checkpoints` holds as pre-committed is never aborted: a restart
 * from that checkpoint commits it, and aborting it would lose that checkpoint's output. For a
 * job run as shards that is every shard's checkpoints, read from the job's root location
 * (core's readLocationCheckpoints): a shard's folder would hide the others' pre-committed work.
 * Work a checkpoint holds only as open (begun after its barrier) is what a restart aborts
 * anyway; it is reported as such and may be aborted. Without `--checkpoints` nothing tells
 * pre-committed work apart, so `--abort` refuses, listing what it would end, unless
 * `--abort-without-checkpoints` accepts losing the output of the checkpoints that pre-committed it.
 */
import { createInterface } from "node:readline/promises";
import { ConfigurationError, type LingeringWork, type LingeringWorkFinder } from "@exactly/core";
import { readLocationCheckpoints } from "@exactly/core/internal";
import { openCheckpointStorage } from "../inspect/inspect-command.ts";
import { withS3CredentialsHint } from "../s3-connection.ts";

export interface LingeringOptions {
  /**
   * The job's checkpoint location (directory or s3://), its root for a sharded job: what any of
   * its checkpoints references is spared or marked.
   */
  readonly checkpoints?: string;
  /** For s3:// checkpoint locations: the server. */
  readonly s3Endpoint?: string;
  /** Only work older than this many seconds is eligible for --abort. */
  readonly olderThanSeconds?: number;
}

export type LingeringStatus =
  /** No checkpoint references it: nothing will ever commit it. */
  | "unreferenced"
  /** A checkpoint holds it as open at its barrier: a restart from that checkpoint aborts it. */
  | "open-at-checkpoint"
  /** A checkpoint holds it as pre-committed: a restart from that checkpoint commits it. Never aborted. */
  | "pre-committed";

export interface LingeringItem {
  readonly id: string;
  /** What a checkpoint references it by (transactional id with producer id and epoch, gid, upload id). */
  readonly reference: string;
  readonly detail: string;
  readonly startedAt: string | null;
  readonly ageSeconds: number | null;
  readonly status: LingeringStatus;
  /** The ids of the checkpoints that reference it (pre-committed or open). */
  readonly checkpointIds: readonly number[];
  /** The same checkpoints with the shard that took each (null: the job before it was sharded). */
  readonly referencedBy: ReadonlyArray<{ readonly checkpointId: number; readonly shard: number | null }>;
  /** Whether --abort may end it: not pre-committed, and older than --older-than. */
  readonly abortable: boolean;
  aborted: boolean;
}

export interface LingeringReport {
  readonly description: string;
  /** Checkpoints read at --checkpoints; null when none was given (then nothing is referenced). */
  readonly checkpointsRead: number | null;
  /** The shards whose checkpoints were read (empty: the job is not sharded); null without --checkpoints. */
  readonly shardsRead: readonly number[] | null;
  readonly items: LingeringItem[];
}

/** Lists the finder's open work and sorts it against the checkpoints at `options.checkpoints`. */
export async function findLingering(finder: LingeringWorkFinder, options: LingeringOptions): Promise<LingeringReport> {
  const references = options.checkpoints === undefined ? undefined : await checkpointReferences(finder, options);
  const now = Date.now();
  const work = await finder.list();
  const items = work.map((w): LingeringItem => {
    const ref = references?.byReference.get(w.reference);
    const status: LingeringStatus = ref?.pending.length
      ? "pre-committed"
      : ref?.open.length
        ? "open-at-checkpoint"
        : "unreferenced";
    const ageSeconds = w.startedAt === undefined ? null : Math.max(0, (now - w.startedAt) / 1000);
    const referrers = referrersOf([...(ref?.pending ?? []), ...(ref?.open ?? [])]);
    const oldEnough =
      options.olderThanSeconds === undefined || (ageSeconds !== null && ageSeconds >= options.olderThanSeconds);
    return {
      id: w.id,
      reference: w.reference,
      detail: w.detail,
      startedAt: w.startedAt === undefined ? null : new Date(w.startedAt).toISOString(),
      ageSeconds,
      status,
      checkpointIds: [...new Set(referrers.map((r) => r.checkpointId))].sort((a, b) => a - b),
      referencedBy: referrers,
      abortable: status !== "pre-committed" && oldEnough,
      aborted: false,
    };
  });
  return {
    description: finder.description,
    checkpointsRead: references?.checkpoints ?? null,
    shardsRead: references?.shards ?? null,
    items,
  };
}

/** A checkpoint referencing a piece of work: its id, and the shard that took it (null: unsharded). */
interface Referrer {
  readonly checkpointId: number;
  readonly shard: number | null;
}

interface References {
  readonly byReference: Map<string, { pending: Referrer[]; open: Referrer[] }>;
  readonly checkpoints: number;
  readonly shards: readonly number[];
}

/** Each checkpoint once, by shard then id. */
function referrersOf(all: readonly Referrer[]): Referrer[] {
  const unique = new Map(all.map((r) => [`${r.shard}/${r.checkpointId}`, r]));
  return [...unique.values()].sort((a, b) => (a.shard ?? -1) - (b.shard ?? -1) || a.checkpointId - b.checkpointId);
}

/**
 * Every reference any checkpoint at the location holds, complete or not (one in flight may
 * complete), of every shard for a sharded job: readLocationCheckpoints refuses a sub-folder,
 * which would hide the other shards' pre-committed work.
 */
async function checkpointReferences(finder: LingeringWorkFinder, options: LingeringOptions): Promise<References> {
  const location = options.checkpoints as string;
  const storage = await openCheckpointStorage(location, options);
  try {
    const { checkpoints, shards } = await withS3CredentialsHint(
      readLocationCheckpoints(storage, location, "--checkpoints"),
    );
    // A mistyped location would make every pre-committed transaction look unreferenced.
    if (checkpoints.length === 0) {
      throw new ConfigurationError(
        "--checkpoints",
        `${location} holds no checkpoint; give the job's checkpoint location, or leave --checkpoints out to treat all work as unreferenced`,
      );
    }
    const references: References = { byReference: new Map(), checkpoints: checkpoints.length, shards };
    for (const checkpoint of checkpoints) {
      const referrer: Referrer = { checkpointId: checkpoint.checkpointId, shard: checkpoint.shard ?? null };
      for (const [taskKey, { state }] of checkpoint.states) {
        const stage = taskKey.slice(0, taskKey.lastIndexOf("/"));
        const kind = checkpoint.metadata?.stages[stage]?.kind;
        if (kind !== undefined && kind !== "sink") continue;
        const found = finder.referencesIn(state);
        for (const [list, refs] of [
          ["pending", found.pending],
          ["open", found.open],
        ] as const) {
          for (const ref of refs) {
            const entry = references.byReference.get(ref) ?? { pending: [], open: [] };
            entry[list].push(referrer);
            references.byReference.set(ref, entry);
          }
        }
      }
    }
    return references;
  } finally {
    (storage as { close?: () => void }).close?.();
  }
}

/** Aborts every abortable item of the report, marking it; returns how many were aborted. */
export async function abortLingering(finder: LingeringWorkFinder, report: LingeringReport): Promise<number> {
  const work = new Map<string, LingeringWork>((await finder.list()).map((w) => [w.reference, w]));
  let aborted = 0;
  for (const item of report.items) {
    if (!item.abortable) continue;
    const current = work.get(item.reference);
    // Gone since the listing (committed, aborted, timed out): nothing to end.
    if (!current) continue;
    await finder.abort(current);
    item.aborted = true;
    aborted++;
  }
  return aborted;
}

const STATUS_TEXT: Record<LingeringStatus, string> = {
  unreferenced: "no checkpoint references it",
  "open-at-checkpoint": "open at checkpoint(s) {ids}: a restart from them aborts it",
  // A job restores a sink's state only under its name or one renamed from it (docs/design.md I10).
  "pre-committed":
    "pre-committed by checkpoint(s) {ids}: a restart of the job with this sink (or a sink declared renamedFrom its name) commits it, so it is never aborted here",
};

export function formatLingering(report: LingeringReport): string {
  const lines = [`${report.description}: ${report.items.length} open`];
  if (report.checkpointsRead === null)
    lines.push("  no --checkpoints given: whether a completed checkpoint pre-committed any of them is unknown");
  else
    lines.push(
      `  checked against ${report.checkpointsRead} checkpoint(s)${report.shardsRead?.length ? ` of ${report.shardsRead.length} shard(s)` : ""}`,
    );
  for (const item of report.items) {
    const age = item.ageSeconds === null ? "age unknown" : `age ${item.ageSeconds.toFixed(1)} s`;
    const ids = item.referencedBy.map((r) =>
      r.shard === null ? `${r.checkpointId}` : `${r.checkpointId} of shard ${r.shard}`,
    );
    const status = STATUS_TEXT[item.status].replace("{ids}", ids.join(", "));
    let outcome = "";
    if (item.aborted) outcome = " — aborted";
    else if (!item.abortable && item.status !== "pre-committed") outcome = " — younger than --older-than, left open";
    lines.push(`  ${item.id} (${age}; ${item.detail}): ${status}${outcome}`);
  }
  return lines.join("\n");
}

export interface LingeringRun extends LingeringOptions {
  readonly abort?: boolean;
  /**
   * Aborts without --checkpoints, accepting that work a completed checkpoint pre-committed is
   * rolled back and that checkpoint's output lost. Without it, --abort needs --checkpoints.
   */
  readonly abortWithoutCheckpoints?: boolean;
  /** Aborts without asking. */
  readonly yes?: boolean;
  readonly json?: boolean;
}

/**
 * The command: lists, then with --abort asks (or takes --yes) and aborts. Exit codes: 0 when
 * no work is left open, 1 when some is (listed and not aborted), 2 bad usage or configuration
 * (thrown as ConfigurationError).
 */
export async function runLingeringCommand(finder: LingeringWorkFinder, options: LingeringRun): Promise<number> {
  try {
    const report = await findLingering(finder, options);
    const abortable = report.items.filter((i) => i.abortable);
    const aborting = options.abort === true || options.abortWithoutCheckpoints === true;
    if (aborting && abortable.length > 0) {
      if (!options.yes && !process.stdin.isTTY) {
        throw new ConfigurationError(
          "--yes",
          "--abort asks for confirmation on a terminal; give --yes to abort without one",
        );
      }
      if (options.checkpoints === undefined && !options.abortWithoutCheckpoints) {
        console.log(options.json ? JSON.stringify(report, null, 2) : formatLingering(report));
        throw new ConfigurationError(
          "--checkpoints",
          `is needed by --abort: without the job's checkpoints nothing tells which of these ${abortable.length} a completed checkpoint pre-committed, and rolling such work back loses that checkpoint's output. It would abort: ${abortable.map((i) => `${i.id} (${i.detail})`).join("; ")}. Give --checkpoints <the job's checkpoint location> to spare what its checkpoints pre-committed, or --abort-without-checkpoints to abort all of them, accepting that loss`,
        );
      }
      if (!options.yes) {
        console.log(formatLingering(report));
        const prompt = createInterface({ input: process.stdin, output: process.stdout });
        const loss =
          options.checkpoints === undefined ? ", losing the output of any checkpoint that pre-committed one" : "";
        const answer = await prompt.question(`abort ${abortable.length} of them${loss}? [y/N] `);
        prompt.close();
        if (!/^y(es)?$/i.test(answer.trim())) return report.items.length === 0 ? 0 : 1;
      }
      await abortLingering(finder, report);
    }
    console.log(options.json ? JSON.stringify(report, null, 2) : formatLingering(report));
    return report.items.some((i) => !i.aborted) ? 1 : 0;
  } finally {
    await finder.close();
  }
}
