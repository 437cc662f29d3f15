import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { ownsSubtaskIndex } from "@exactly/core/internal";
import type { ScenarioScope } from "../definition.ts";
import { type Hook, JOURNAL, type JournalEntry, LANES } from "./child-protocol.ts";

/** Every line the scenario's runs journaled so far, in order. */
export async function readJournal(scope: ScenarioScope): Promise<JournalEntry[]> {
  const text = await readFile(join(scope.dir, JOURNAL), "utf8").catch(() => "");
  const entries: JournalEntry[] = [];
  for (const line of text.split("\n")) {
    // A SIGKILL can cut the last line short; the lines before it are whole.
    if (!line) continue;
    try {
      entries.push(JSON.parse(line) as JournalEntry);
    } catch {}
  }
  return entries;
}

/** What a scenario's runs exercised, from the journal: the results table reports it. */
export interface Exercised {
  /** Some run restored a checkpoint with sink state in it. */
  readonly restoredState: boolean;
  /** Some restored state held pending (pre-committed, uncommitted) work to commit. */
  readonly pendingRestored: boolean;
  /** Some subtask restored the state of an old subtask of another index. */
  readonly acrossIndexes: boolean;
  /** Some subtask restored the states of several old subtasks at once. */
  readonly merged: boolean;
  /** Some checkpoint was declined after a subtask had pre-committed for it. */
  readonly declinedAfterPreCommit: boolean;
  /** Some completion notification reached the sink after its next snapshot. */
  readonly lateNotification: boolean;
  /** Some run had its sink subtasks on two or more threads. */
  readonly onThreads: boolean;
  /**
   * Some subtask restored pending work of an old index whose lingering cleanup another
   * subtask owns (`ownsSubtaskIndex`): after 4 → 2, old index 3's state goes to subtask 1,
   * its cleanup to subtask 0.
   */
  readonly pendingAcrossOwners: boolean;
  /**
   * The owner of such an index finished its open (its lingering cleanup) before the
   * subtask that restored the index's pending work started its recovery commits.
   */
  readonly cleanupBeforeCommits: boolean;
  /**
   * A subtask that restored pending work finished its open (recovery commits, then a new
   * transaction begun) before another subtask, which cleans up lingering work, started its open.
   */
  readonly commitsBeforeCleanup: boolean;
  /** A completion reached a subtask while an older checkpoint it pre-committed was still pending. */
  readonly subsumedCompletion: boolean;
  /** A checkpoint was declined after a subtask pre-committed it, and a later completion then reached that subtask. */
  readonly declinedThenCompleted: boolean;
  /** Hooks a random kill landed inside of. */
  readonly killedInside: readonly Hook[];
  /** Of those, hooks a kill landed inside of before a synchronous client's call (node:sqlite). */
  readonly killedInsideSynchronously: readonly Hook[];
  /**
   * Most external operations a call of each hook started in its own context (`ios`), and
   * the process started while it was in flight (`during`), in the latest run that made one:
   * sizes the next kills.
   */
  readonly ios: Partial<Record<Hook, { readonly ios: number; readonly during: number }>>;
}

export function exercised(entries: readonly JournalEntry[]): Exercised {
  let restoredState = false;
  let pendingRestored = false;
  let acrossIndexes = false;
  let merged = false;
  let lateNotification = false;
  const killedInside = new Set<Hook>();
  const killedInsideSynchronously = new Set<Hook>();
  const ios: Partial<Record<Hook, { ios: number; during: number }>> = {};
  const iosPid: Partial<Record<Hook, number>> = {};
  const snapshots = new Set<string>();
  const declined: string[] = [];
  const threads = new Map<number, Set<number>>();
  // Per process, where each subtask's open started and returned in the journal's order.
  const opens = new Map<
    number,
    {
      parallelism: number;
      started: Map<number, { at: number; pendingFrom: readonly number[] }>;
      ended: Map<number, number>;
    }
  >();
  let pendingAcrossOwners = false;
  let subsumedCompletion = false;
  const subsumed: string[] = [];
  for (const [at, entry] of entries.entries()) {
    switch (entry.e) {
      case "opened":
        opens.get(entry.pid)?.ended.set(entry.subtask, at);
        break;
      case "notified":
        if (entry.older && entry.older.length > 0) {
          subsumedCompletion = true;
          for (const id of entry.older) subsumed.push(`${entry.pid}/${id}`);
        }
        break;
      case "open": {
        const pendingFrom = entry.pendingFrom ?? [];
        if (pendingFrom.some((j) => !ownsSubtaskIndex(entry.subtask, entry.parallelism, j))) pendingAcrossOwners = true;
        let run = opens.get(entry.pid);
        if (!run) {
          run = { parallelism: entry.parallelism, started: new Map(), ended: new Map() };
          opens.set(entry.pid, run);
        }
        run.started.set(entry.subtask, { at, pendingFrom });
        if (!threads.has(entry.pid)) threads.set(entry.pid, new Set());
        threads.get(entry.pid)?.add(entry.thread);
        if (entry.restoredFrom.length > 0) restoredState = true;
        if (entry.restoredPending > 0) pendingRestored = true;
        if (entry.restoredFrom.some((j) => j !== entry.subtask)) acrossIndexes = true;
        if (entry.restoredFrom.length > 1) merged = true;
        break;
      }
      case "snapshot":
        // Subtask 0 is the slow one a decline waits for; the others pre-commit on time.
        if (entry.subtask !== 0 && Object.keys(entry.lanes).length > 0)
          snapshots.add(`${entry.pid}/${entry.checkpointId}`);
        break;
      case "declined":
        declined.push(`${entry.pid}/${entry.checkpointId}`);
        break;
      case "late-notified":
        lateNotification = true;
        break;
      case "ios": {
        // The latest run's calls size the next kills; within one run, the longest call.
        const fresh = iosPid[entry.hook] !== entry.pid;
        iosPid[entry.hook] = entry.pid;
        const before = fresh ? { ios: 0, during: 0 } : (ios[entry.hook] ?? { ios: 0, during: 0 });
        ios[entry.hook] = { ios: Math.max(before.ios, entry.ios), during: Math.max(before.during, entry.during) };
        break;
      }
      case "kill":
        if (entry.inside) killedInside.add(entry.hook);
        if (entry.inside && entry.synchronous) killedInsideSynchronously.add(entry.hook);
        break;
    }
  }
  return {
    restoredState,
    pendingRestored,
    acrossIndexes,
    merged,
    declinedAfterPreCommit: declined.some((d) => snapshots.has(d)),
    pendingAcrossOwners,
    ...openOrders(opens),
    subsumedCompletion,
    declinedThenCompleted: declined.some((d) => snapshots.has(d) && subsumed.includes(d)),
    lateNotification,
    onThreads: [...threads.values()].some((seen) => seen.size > 1),
    killedInside: [...killedInside],
    killedInsideSynchronously: [...killedInsideSynchronously],
    ios,
  };
}

/** One subtask's transaction of one completed checkpoint: the ids it holds, by lane. */
export interface TransactionIds {
  readonly checkpointId: number;
  readonly subtask: number;
  readonly ids: readonly number[];
}

/** Which orders of recovery the runs' opens showed, from where each open started and returned. */
function openOrders(
  opens: ReadonlyMap<
    number,
    {
      parallelism: number;
      started: ReadonlyMap<number, { at: number; pendingFrom: readonly number[] }>;
      ended: ReadonlyMap<number, number>;
    }
  >,
): { cleanupBeforeCommits: boolean; commitsBeforeCleanup: boolean } {
  let cleanupBeforeCommits = false;
  let commitsBeforeCleanup = false;
  for (const { parallelism, started, ended } of opens.values()) {
    for (const [subtask, { at, pendingFrom }] of started) {
      if (pendingFrom.length === 0) continue;
      for (const j of pendingFrom) {
        // The one subtask that cleans up index j in this run.
        const owner = j < parallelism ? j : 0;
        if (owner !== subtask && (ended.get(owner) ?? Number.POSITIVE_INFINITY) < at) cleanupBeforeCommits = true;
      }
      const done = ended.get(subtask);
      if (done === undefined) continue;
      for (const [other, begun] of started) if (other !== subtask && begun.at > done) commitsBeforeCleanup = true;
    }
  }
  return { cleanupBeforeCommits, commitsBeforeCleanup };
}

/**
 * The transactions of checkpoints that completed, from the journal: the ids each subtask
 * wrote between its previous snapshot and the snapshot of that checkpoint.
 */
export function completedTransactions(entries: readonly JournalEntry[]): TransactionIds[] {
  const completed = new Set<string>();
  for (const entry of entries) if (entry.e === "complete") completed.add(`${entry.pid}/${entry.checkpointId}`);
  const out: TransactionIds[] = [];
  for (const entry of entries) {
    if (entry.e !== "snapshot" || !completed.has(`${entry.pid}/${entry.checkpointId}`)) continue;
    const ids: number[] = [];
    for (const [first, last] of Object.values(entry.lanes)) for (let id = first; id <= last; id += LANES) ids.push(id);
    if (ids.length > 0) out.push({ checkpointId: entry.checkpointId, subtask: entry.subtask, ids });
  }
  return out;
}
