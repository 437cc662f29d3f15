/**
 * `exactly inspect <checkpoint location>`: what a job's checkpoints hold, read without
 * touching them. It lists every checkpoint (complete or not), each source subtask's
 * positions, and each sink subtask's pending transactions with their age and, where the
 * state records it, their transaction timeout.
 */
import { existsSync } from "node:fs";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import {
  type CheckpointStorage,
  ConfigurationError,
  FileSystemCheckpointStorage,
  type InspectedCheckpoint,
  type LeaseState,
} from "@exactly/core";
import type { HeadState } from "@exactly/core/internal";
import { DEMO_CHECKPOINT_DIR } from "../demo-checkpoints.ts";
import { loadS3Connector, s3ConnectionFromEnv, withS3CredentialsHint } from "../s3-connection.ts";
import { addressOf, checkAnyServer } from "../server-check.ts";

export interface InspectOptions {
  readonly json?: boolean;
  /** For s3:// locations: the server (default $EXACTLY_S3_ENDPOINT, else AWS). */
  readonly s3Endpoint?: string;
}

export interface PendingReport {
  readonly checkpointId: number;
  /** Seconds since the transaction began, at the time of the inspection; null when the state does not say. */
  readonly ageSeconds: number | null;
  readonly records: number | null;
  readonly transactionTimeoutMs: number | null;
  /** Committed since: the checkpoint is marked committed (a final checkpoint after a clean stop or end). */
  readonly committed: boolean;
}

export interface CheckpointReport {
  readonly checkpointId: number;
  readonly complete: boolean;
  readonly final: boolean;
  /** Every sink committed it, as the storage records for a final checkpoint; false: not recorded. */
  readonly committed: boolean;
  /** When the checkpoint completed (ISO 8601); null while incomplete. */
  readonly completedAt: string | null;
  /** Bytes of the task states; null while incomplete. */
  readonly sizeBytes: number | null;
  /** The job that wrote it (docs/design.md I10): a checkpoint is restored only into a job of this id; null while incomplete. */
  readonly job: { readonly name: string; readonly id: string; readonly group?: string } | null;
  /** Every stage it holds state of: its uid (a sink's name), kind and parallelism; empty while incomplete. */
  readonly stages: ReadonlyArray<{ uid: string; kind: string | null; parallelism: number }>;
  readonly sources: ReadonlyArray<{ stage: string; subtask: number; positions: unknown }>;
  readonly sinks: ReadonlyArray<{ stage: string; subtask: number; pending: readonly PendingReport[] }>;
}

/** One shard of a job run as shards (docs/design.md §2, Shards): its owner, head and checkpoints. */
export interface ShardReport {
  readonly shard: number;
  /** The newest owner's epoch, as the head records it; null before the shard was first owned. */
  readonly epoch: number | null;
  /** The checkpoint the head names complete (a restart of the shard restores it). */
  readonly latest: { readonly checkpointId: number; readonly epoch: number } | null;
  /** Who holds the lease, and whether it was released (a graceful end); null: never taken. */
  readonly lease: { readonly owner: string; readonly epoch: number; readonly released: boolean } | null;
  /** The checkpoints of the epoch folder the head names. */
  readonly checkpoints: readonly CheckpointReport[];
}

export interface ShardedReport {
  /**
   * The shard count and layout generation of the location's `_layout`, and the count of a
   * declared rescale (`exactly rescale`) if any; null if it has none.
   */
  readonly layout: {
    readonly count: number;
    readonly generation: number;
    readonly next?: number;
    /** The first epoch of this generation: the clock's milliseconds when it began. */
    readonly minEpoch?: number;
  } | null;
  readonly shards: readonly ShardReport[];
}

export async function inspectCheckpoints(location: string, options: InspectOptions = {}): Promise<CheckpointReport[]> {
  const storage = await openCheckpointStorage(location, options);
  try {
    return await reportsOf(location, storage);
  } finally {
    (storage as { close?: () => void }).close?.();
  }
}

async function reportsOf(location: string, storage: CheckpointStorage): Promise<CheckpointReport[]> {
  if (!storage.inspect)
    throw new ConfigurationError("checkpoint location", `${location}: this storage cannot be inspected`);
  const now = Date.now();
  return (await withS3CredentialsHint(storage.inspect())).map((checkpoint) => report(checkpoint, now));
}

/** The groups of a job run as groups (docs/design.md §2, Groups): its `group-<name>/` folders, by name. */
export async function inspectGroups(location: string, options: InspectOptions = {}): Promise<string[]> {
  const storage = await openCheckpointStorage(location, options);
  try {
    return (await withS3CredentialsHint(storage.scopes?.() ?? Promise.resolve([])))
      .map((name) => /^group-(.+)$/.exec(name)?.[1])
      .filter((g): g is string => g !== undefined)
      .sort();
  } finally {
    (storage as { close?: () => void }).close?.();
  }
}

/** The location of one group's folder. */
export function groupLocation(location: string, group: string): string {
  return `${location.replace(/\/+$/, "")}/group-${group}`;
}

/** A sharded job's location: every `shard-k/` folder's owner, head and checkpoints; undefined if it has none. */
export async function inspectShards(
  location: string,
  options: InspectOptions = {},
): Promise<ShardedReport | undefined> {
  const storage = await openCheckpointStorage(location, options);
  try {
    const indexes = (await withS3CredentialsHint(storage.scopes?.() ?? Promise.resolve([])))
      .map((name) => /^shard-(\d+)$/.exec(name)?.[1])
      .filter((k): k is string => k !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
    if (indexes.length === 0) return undefined;
    const layout = (
      await storage.record?.<{ count: number; generation: number; next?: number; minEpoch?: number }>("layout").read()
    )?.value;
    const shards: ShardReport[] = [];
    for (const shard of indexes) {
      const folder = storage.scoped?.(`shard-${shard}`) as CheckpointStorage;
      const head = (await folder.record?.<HeadState>("head").read())?.value;
      const lease = (await folder.record?.<LeaseState>("lease").read())?.value;
      const latest = head?.latest ?? null;
      const checkpoints = latest
        ? await reportsOf(location, folder.scoped?.(`epoch-${latest.epoch}`) as CheckpointStorage)
        : [];
      shards.push({
        shard,
        epoch: head?.epoch ?? null,
        latest,
        lease: lease ? { owner: lease.owner, epoch: lease.epoch, released: lease.released } : null,
        checkpoints,
      });
    }
    return {
      layout: layout
        ? {
            count: layout.count,
            generation: layout.generation,
            ...(layout.next === undefined ? {} : { next: layout.next }),
            ...(typeof layout.minEpoch === "number" ? { minEpoch: layout.minEpoch } : {}),
          }
        : null,
      shards,
    };
  } finally {
    (storage as { close?: () => void }).close?.();
  }
}

/** Each shard's owner and head, then its checkpoints as for a job that is not sharded. */
export function formatShards(location: string, sharded: ShardedReport): string {
  const lines = [
    sharded.layout
      ? `a job run as ${sharded.layout.count} shards at ${location} (layout generation ${sharded.layout.generation}` +
        `${sharded.layout.next === undefined ? "" : `; a rescale to ${sharded.layout.next} shards is declared`})`
      : `shard folders at ${location}`,
  ];
  // Epochs begin at the clock's milliseconds and grow by one per owner: 13 digits that differ
  // in the last few. Shown as the generation and the count since it began; raw under --json.
  const minEpoch = sharded.layout?.minEpoch;
  const g = `g${sharded.layout?.generation}`;
  const epoch = (e: number) =>
    minEpoch === undefined ? String(e) : e >= minEpoch ? `${g}+${e - minEpoch}` : `${g}-${minEpoch - e}`;
  if (minEpoch !== undefined) {
    lines.push(
      `epochs: ${g}+k is the k-th after generation ${sharded.layout?.generation} began at ` +
        `${new Date(minEpoch).toISOString()} (epoch ${minEpoch}), ${g}-k one k before it; --json gives every epoch raw`,
    );
  }
  for (const s of sharded.shards) {
    const lease = s.lease
      ? s.lease.released
        ? `released by ${s.lease.owner} (epoch ${epoch(s.lease.epoch)})`
        : `held by ${s.lease.owner} at epoch ${epoch(s.lease.epoch)}`
      : "never taken";
    const latest = s.latest ? `checkpoint ${s.latest.checkpointId} (epoch ${epoch(s.latest.epoch)})` : "none";
    const retired =
      sharded.layout && s.shard >= sharded.layout.count
        ? ` (not in the current layout of ${sharded.layout.count}: its state went to the shards that are)`
        : "";
    lines.push(
      "",
      `shard ${s.shard}${retired}: lease ${lease}; head at epoch ${s.epoch === null ? "-" : epoch(s.epoch)}, latest complete ${latest}`,
    );
    if (s.checkpoints.length > 0)
      lines.push(
        ...formatInspection(`${location}/shard-${s.shard}/epoch-${s.latest?.epoch}`, s.checkpoints)
          .split("\n")
          .map((line) => `  ${line}`),
      );
  }
  return lines.join("\n");
}

/** The storage at a checkpoint location, read only: a directory that exists, or s3://bucket/prefix. */
export async function openCheckpointStorage(
  location: string,
  options: { readonly s3Endpoint?: string },
): Promise<CheckpointStorage> {
  if (location.startsWith("s3://")) {
    const connection = s3ConnectionFromEnv(options.s3Endpoint);
    if (connection.endpoint) {
      await checkAnyServer("--s3-endpoint (or $EXACTLY_S3_ENDPOINT)", "the S3 server", [
        addressOf(connection.endpoint, 443),
      ]);
    }
    const s3 = await loadS3Connector("an s3:// checkpoint location");
    return new s3.S3CheckpointStorage({ location, connection });
  }
  // Read only: a mistyped path must not come back as an empty, newly made location.
  const found = await stat(location).catch(() => undefined);
  if (!found?.isDirectory()) throw new ConfigurationError("checkpoint location", `${location} is not a directory`);
  return new FileSystemCheckpointStorage(location);
}

function report(checkpoint: InspectedCheckpoint, now: number): CheckpointReport {
  const { metadata } = checkpoint;
  const sources: Array<CheckpointReport["sources"][number]> = [];
  const sinks: Array<CheckpointReport["sinks"][number]> = [];
  let sizeBytes = 0;
  for (const [taskKey, { bytes, state }] of checkpoint.states) {
    sizeBytes += bytes;
    const slash = taskKey.lastIndexOf("/");
    const stage = taskKey.slice(0, slash);
    const subtask = Number(taskKey.slice(slash + 1));
    const kind = metadata?.stages[stage]?.kind ?? guessKind(stage, state);
    if (kind === "source") sources.push({ stage, subtask, positions: state });
    else if (kind === "sink") sinks.push({ stage, subtask, pending: pendingOf(state, now, checkpoint.committed) });
  }
  const byTask = (a: { stage: string; subtask: number }, b: { stage: string; subtask: number }) =>
    a.stage === b.stage ? a.subtask - b.subtask : a.stage < b.stage ? -1 : 1;
  sources.sort(byTask);
  sinks.sort(byTask);
  return {
    checkpointId: checkpoint.checkpointId,
    complete: metadata !== undefined,
    final: metadata?.final === true,
    committed: checkpoint.committed,
    completedAt: metadata ? new Date(metadata.timestamp).toISOString() : null,
    sizeBytes: metadata ? sizeBytes : null,
    job: metadata ? (metadata.job ?? { name: metadata.jobName, id: metadata.jobName }) : null,
    stages: Object.entries(metadata?.stages ?? {}).map(([uid, stage]) => ({
      uid,
      kind: stage.kind ?? null,
      parallelism: stage.parallelism,
    })),
    sources,
    sinks,
  };
}

/** Checkpoints taken before stage kinds were recorded: sink states of the base classes list `pending`. */
function guessKind(stage: string, state: unknown): "source" | "sink" | "operator" {
  if (Array.isArray((state as { pending?: unknown } | null)?.pending)) return "sink";
  return stage.startsWith("source:") ? "source" : "operator";
}

/** The pending transactions of a two-phase-commit state, or the pending logs of a write-ahead one. */
function pendingOf(state: unknown, now: number, committed: boolean): PendingReport[] {
  const s = (state ?? {}) as {
    pending?: Array<{ checkpointId?: number; startedAt?: number; records?: number }>;
    transactionTimeoutMs?: number;
  };
  if (!Array.isArray(s.pending)) return [];
  return s.pending.map((p) => ({
    checkpointId: Number(p.checkpointId),
    ageSeconds: typeof p.startedAt === "number" ? (now - p.startedAt) / 1000 : null,
    records: typeof p.records === "number" ? p.records : null,
    transactionTimeoutMs: typeof s.transactionTimeoutMs === "number" ? s.transactionTimeoutMs : null,
    committed,
  }));
}

/**
 * A table of every checkpoint, then the sources and sinks of the latest complete one (what a
 * restart restores). With none, where checkpoints usually are instead.
 */
export function formatInspection(location: string, reports: readonly CheckpointReport[]): string {
  if (reports.length === 0) return noCheckpoints(location);
  const lines = [`checkpoints at ${location}: ${reports.length}`];
  lines.push(`  ${"id".padStart(6)}  ${"completed at".padEnd(24)}  ${"size".padStart(10)}  state`);
  for (const r of reports) {
    const state = r.complete
      ? [r.final ? "complete, final" : "complete", ...(r.committed ? ["committed"] : [])].join(", ")
      : "incomplete";
    const size = r.sizeBytes === null ? "-" : `${r.sizeBytes} B`;
    lines.push(
      `  ${String(r.checkpointId).padStart(6)}  ${(r.completedAt ?? "-").padEnd(24)}  ${size.padStart(10)}  ${state}`,
    );
  }
  const latest = [...reports].reverse().find((r) => r.complete);
  if (!latest) {
    lines.push("no complete checkpoint: a start begins from nothing");
    return lines.join("\n");
  }
  lines.push(
    `latest complete: ${latest.checkpointId} (a restart restores it${latest.committed ? "; every sink committed it" : ""})`,
  );
  if (latest.job) lines.push(`  job ${latest.job.name} (id ${latest.job.id}): only a job of this id restores it`);
  lines.push(
    `  stages: ${latest.stages.map((s) => `${s.uid} (${s.kind ?? "kind not recorded"}, parallelism ${s.parallelism})`).join(", ")}`,
  );
  for (const s of latest.sources) lines.push(...formatPositions(`  source ${s.stage}/${s.subtask}`, s.positions));
  for (const s of latest.sinks) {
    const pending = s.pending.map((p) => {
      const age = p.ageSeconds === null ? "age unknown" : `age ${p.ageSeconds.toFixed(1)} s`;
      const timeout =
        p.transactionTimeoutMs === null
          ? ""
          : `, ${Math.round(((p.ageSeconds ?? 0) * 100_000) / p.transactionTimeoutMs)}% of the ${p.transactionTimeoutMs / 1000} s timeout`;
      const records = p.records === null ? "" : `, ${p.records} records`;
      return `checkpoint ${p.checkpointId} (${age}${records}${timeout})`;
    });
    // A committed checkpoint's transactions were pending at its barrier and committed since.
    const state = latest.committed ? "committed" : "pending";
    lines.push(
      `  sink ${s.stage}/${s.subtask}: ${pending.length ? `${pending.length} ${state}: ${pending.join("; ")}` : "nothing pending"}`,
    );
  }
  return lines.join("\n");
}

/** What `inspect` says of a location that holds no checkpoint: where they usually are. */
function noCheckpoints(location: string): string {
  const nested = location.startsWith("s3://") ? undefined : join(location, DEMO_CHECKPOINT_DIR);
  return [
    `no checkpoints at ${location}`,
    ...(nested && existsSync(nested) ? [`  ${nested} is there: exactly inspect ${nested}`] : []),
    `  exactly demo keeps them in ${join("<its --out>", DEMO_CHECKPOINT_DIR)} (the demo prints it);`,
    "  a job run with exactly run keeps them where its checkpoint.storage says (a directory, or s3://bucket/prefix)",
  ].join("\n");
}

/** Positions listed in text; past this many, the rest are counted (--json has them all). */
const POSITIONS_SHOWN = 20;

/**
 * A source's positions, readable: a few on the subtask's line, more one per line (a Kafka
 * source has one per partition, a file source one per file), the rest counted past
 * `POSITIONS_SHOWN`. A shape that is not a flat record is shown as JSON, cut at 200 characters.
 */
export function formatPositions(label: string, positions: unknown): string[] {
  const flat =
    positions !== null &&
    typeof positions === "object" &&
    !Array.isArray(positions) &&
    Object.values(positions).every((v) => v === null || typeof v !== "object");
  if (!flat) {
    const json = JSON.stringify(positions) ?? "none";
    return [`${label}: ${json.length > 200 ? `${json.slice(0, 200)}… (--json shows it whole)` : json}`];
  }
  const entries = Object.entries(positions as Record<string, unknown>).sort(([a], [b]) =>
    a.localeCompare(b, undefined, { numeric: true }),
  );
  const inline = entries.map(([key, value]) => `${key} at ${String(value)}`).join(", ");
  if (entries.length <= 3 && inline.length <= 100) return [`${label}: ${inline || "no positions"}`];
  const width = Math.max(...entries.slice(0, POSITIONS_SHOWN).map(([key]) => key.length));
  const lines = [`${label}: ${entries.length} positions`];
  for (const [key, value] of entries.slice(0, POSITIONS_SHOWN))
    lines.push(`      ${key.padEnd(width)}  ${String(value)}`);
  if (entries.length > POSITIONS_SHOWN)
    lines.push(`      … and ${entries.length - POSITIONS_SHOWN} more (exactly inspect --json lists every one)`);
  return lines;
}
