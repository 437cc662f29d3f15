/**
 * The wrapper the child job puts around the author's sink. It passes every hook through
 * and changes only what a scenario asks for: how completion notifications arrive, which
 * snapshot is slow enough to be declined, and where a random kill lands. It also writes the
 * journal (child-protocol.ts) that the test process checks against.
 */
import { AsyncLocalStorage, createHook } from "node:async_hooks";
import { appendFileSync, closeSync, openSync, readSync, writeSync } from "node:fs";
import { Socket } from "node:net";
import { join } from "node:path";
import { threadId } from "node:worker_threads";
import type { Batch, Sink, SinkContext } from "@exactly/core";
import { armFault } from "@exactly/core/faults";
import type { ConformanceRecord } from "../definition.ts";
import {
  type ChildConfig,
  type Hook,
  type JournalEntry,
  type KillPlan,
  LANES,
  PAUSED_PREFIX,
  RESUMED_PREFIX,
} from "./child-protocol.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Async resources that are not an external operation: promises, timers, ticks. */
const NOT_IO = new Set(["PROMISE", "TickObject", "Immediate", "Timeout", "Microtask"]);

/** One hook call being watched: how many external operations it, and the process, started so far. */
interface WatchedCall {
  readonly hook: Hook;
  ios: number;
  during: number;
  /** Kill before this operation; -1 when the call is only counted. */
  readonly target: number;
  readonly count: KillPlan["count"];
}

/** Shared by every subtask's wrapper in the child: the journal, the kill, the completed count. */
export class ScenarioControl {
  readonly config: ChildConfig;
  private readonly journalPath: string;
  /** Checkpoints this thread knows completed: from the coordinator's event, or from its sinks' notifications. */
  completed = 0;
  private lastCompleted = 0;
  private lateNotifications = 0;
  /** Most external operations a call of each hook made in this run. */
  private readonly ios = new Map<Hook, number>();
  /** Where an armed call dies: the plan's operation, folded into the length of a shorter call that came first. */
  private target: number;
  /** Armed calls that ended short of the target after some operations, and armed calls that made none. */
  private misses = 0;
  private idle = 0;
  private readonly calls = new AsyncLocalStorage<WatchedCall>();
  private readonly inFlight = new Set<WatchedCall>();

  constructor(config: ChildConfig, journalPath: string) {
    this.config = config;
    this.journalPath = journalPath;
    this.target = config.kill?.io ?? -1;
    if (config.kill || config.measure) {
      // Every async resource a watched call creates, directly or through its client
      // library, is attributed to it by the async context; a kill lands before one starts.
      createHook({
        init: (_id, type) => {
          if (!NOT_IO.has(type)) this.operation();
        },
      }).enable();
      // A write to a connected socket creates no async resource (it completes in place),
      // so the clients' requests (Kafka, Postgres, Redis, HTTP) are counted here.
      const write = Socket.prototype.write;
      const control = this;
      Socket.prototype.write = function (this: Socket, ...args: unknown[]) {
        control.operation();
        return (write as (...a: unknown[]) => boolean).apply(this, args);
      } as typeof Socket.prototype.write;
      // A synchronous client starts no async resource at all (node:sqlite's statements run
      // on the calling thread): its calls are counted where they are made, so a kill lands
      // between two of them inside one sink call.
      for (const [prototype, methods] of synchronousClients()) {
        for (const method of methods) {
          const original = prototype[method];
          if (typeof original !== "function") continue;
          prototype[method] = function (this: unknown, ...args: unknown[]) {
            control.operation(true);
            return (original as (...a: unknown[]) => unknown).apply(this, args);
          };
        }
      }
    }
  }

  /** An external operation is about to start: count it for the calls in flight, or die before it. */
  private operation(synchronous = false): void {
    const own = this.calls.getStore();
    for (const call of this.inFlight) {
      const mine = call === own;
      if (call.target >= 0 && (call.count === "process" ? call.during : mine ? call.ios : -1) === call.target) {
        this.die(call.hook, call.target, true, synchronous);
      }
      call.during++;
      if (mine) call.ios++;
    }
  }

  /**
   * Checkpoint `checkpointId` completed, as this thread learns it: the main thread from the
   * coordinator, a worker thread from its sinks' notifications (each id counts once). Arms
   * the scenario's fault point in this thread once enough have completed.
   */
  sawComplete(checkpointId: number): void {
    if (checkpointId <= this.lastCompleted) return;
    this.lastCompleted = checkpointId;
    this.completed++;
    const fault = this.config.fault;
    if (fault && this.completed === fault.afterCheckpoints) armFault(fault.spec);
  }

  /**
   * Waits until each of `subtasks` journaled that its open returned in this process (on
   * any thread: the journal is the one file every thread appends to).
   */
  async waitOpened(subtasks: readonly number[]): Promise<void> {
    const waiting = new Set(subtasks);
    appendFileSync(this.journalPath, "");
    const fd = openSync(this.journalPath, "r");
    let offset = 0;
    let rest = "";
    const chunk = Buffer.alloc(64 * 1024);
    try {
      while (waiting.size > 0) {
        const read = readSync(fd, chunk, 0, chunk.length, offset);
        if (read === 0) {
          await sleep(5);
          continue;
        }
        offset += read;
        const lines = (rest + chunk.toString("utf8", 0, read)).split("\n");
        rest = lines.pop() ?? "";
        for (const line of lines) {
          if (!line.includes('"e":"opened"')) continue;
          const entry = JSON.parse(line) as Extract<JournalEntry, { e: "opened" }>;
          if (entry.pid === process.pid) waiting.delete(entry.subtask);
        }
      }
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Whether the zombie pause (config.zombie) is due at this barrier of a subtask that holds
   * written records: once per process, whichever thread gets there first (a marker file
   * created exclusively, since each worker thread has a control of its own).
   */
  zombieDue(holdsWork: boolean): boolean {
    const zombie = this.config.zombie;
    if (!zombie || this.paused || !holdsWork || this.completed < zombie.afterCheckpoints) return false;
    this.paused = true;
    try {
      closeSync(openSync(join(this.config.scope.dir, `.conformance-paused-${process.pid}`), "wx"));
      return true;
    } catch {
      return false;
    }
  }
  private paused = false;

  /** Pauses the whole process (SIGSTOP) until the test process sends SIGCONT. */
  pauseAsZombie(checkpointId: number): void {
    // Synchronous writes: the test process must see the line before the process stops.
    writeSync(1, `${PAUSED_PREFIX}${checkpointId}\n`);
    process.kill(process.pid, "SIGSTOP");
  }

  /**
   * The zombie's first call after the pause came back: the sink took its work (then the
   * child dies here, leaving what it did for the checks), or refused it with `code`.
   */
  resumedAsZombie(outcome: { took: true } | { took: false; code: string | undefined }): void {
    writeSync(1, `${RESUMED_PREFIX}${JSON.stringify(outcome)}\n`);
    if (outcome.took) process.kill(process.pid, "SIGKILL");
  }

  journal(entry: JournalEntry): void {
    // Synchronous: a SIGKILL right after must not lose the line.
    appendFileSync(this.journalPath, `${JSON.stringify(entry)}\n`);
  }

  die(hook: Hook, io: number, inside: boolean, synchronous = false): never {
    this.journal({ e: "kill", pid: process.pid, hook, io, inside, ...(synchronous ? { synchronous } : {}) });
    process.kill(process.pid, "SIGKILL");
    throw new Error("unreachable: SIGKILL was sent");
  }

  /** Counts a late notification; the scenario may kill the child right after the k-th. */
  lateNotified(subtask: number, checkpointId: number): void {
    this.journal({ e: "late-notified", pid: process.pid, subtask, checkpointId });
    this.lateNotifications++;
    if (this.lateNotifications === this.config.killAfterLateNotification) this.die("snapshotState", 0, false);
  }

  /**
   * Runs one hook call. With a kill plan for this hook, the call runs in an async context
   * of its own, so the external operations it starts are counted, and once enough
   * checkpoints completed the child SIGKILLs itself before the planned one.
   */
  track<T>(hook: Hook, call: () => T | Promise<T>): T | Promise<T> {
    const kill = this.config.kill;
    if (!this.config.measure && (!kill || (kill.hook !== hook && hook !== "open"))) return call();
    const armed = kill?.hook === hook && this.completed >= kill.afterCheckpoints;
    const watched: WatchedCall = {
      hook,
      ios: 0,
      during: 0,
      target: armed ? this.target : -1,
      count: kill?.count ?? "call",
    };
    const ended = () => {
      this.inFlight.delete(watched);
      const size = Math.max(watched.ios, watched.during);
      // A hook's first call is journaled even when it made no operation: "measured, idle".
      if (hook === "open" || size > (this.ios.get(hook) ?? -1)) {
        this.ios.set(hook, Math.max(size, this.ios.get(hook) ?? 0));
        this.journal({ e: "ios", pid: process.pid, hook, ios: watched.ios, during: watched.during });
      }
      if (!armed) return;
      // The call made fewer operations than planned. An open does not come again in this
      // run: die right after it. A call that made some folds the target into its length, so
      // the next call as long is hit inside; a hook whose calls keep falling short, or make
      // none at all, may never reach it: then die right after a call.
      const made = watched.count === "process" ? watched.during : watched.ios;
      if (hook === "open") this.die(hook, made, false);
      if (made > 0) {
        this.target %= made;
        if (++this.misses > 3) this.die(hook, made, false);
      } else if (++this.idle > 20) this.die(hook, 0, false);
    };
    this.inFlight.add(watched);
    const result = this.calls.run(watched, call);
    if (!(result instanceof Promise)) {
      ended();
      return result;
    }
    return result.then((value) => {
      ended();
      return value;
    });
  }
}

/**
 * The synchronous clients whose calls count as external operations: node:sqlite's
 * statements (when this Node has it).
 */
function synchronousClients(): Array<[Record<string, unknown>, readonly string[]]> {
  try {
    const sqlite = process.getBuiltinModule("node:sqlite") as typeof import("node:sqlite") | undefined;
    if (!sqlite) return [];
    return [
      [sqlite.DatabaseSync.prototype as unknown as Record<string, unknown>, ["exec"]],
      [sqlite.StatementSync.prototype as unknown as Record<string, unknown>, ["run", "get", "all", "iterate"]],
    ];
  } catch {
    return [];
  }
}

/** The `code` of an error or of its cause (ShardFencedError's SHARD_FENCED …). */
function errorCode(error: unknown): string | undefined {
  for (let e: unknown = error; e; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
  }
  return undefined;
}

/** Pending work in a restored state, as the base classes record it (a `pending` list). */
function pendingIn(state: unknown): number {
  const pending = (state as { pending?: unknown } | null)?.pending;
  return Array.isArray(pending) ? pending.length : 0;
}

export class ScenarioSink implements Sink<ConformanceRecord> {
  private readonly inner: Sink<ConformanceRecord>;
  private readonly control: ScenarioControl;
  private subtask = 0;
  /** Per lane, the first and last id written since the last snapshot. */
  private lanes = new Map<number, [number, number]>();
  /** With "after-next-barrier": notifications held until the next snapshot has pre-committed. */
  private readonly held = new Map<number, () => Promise<void>>();
  /** With "late": an odd checkpoint's notification, held until the next one has reached the sink. */
  private heldLate: { readonly checkpointId: number; readonly release: () => Promise<void> } | undefined;
  /** Checkpoints this subtask pre-committed (records in its snapshot), in order, not yet known completed. */
  private preCommitted: number[] = [];
  /** The newest checkpoint whose completion reached the sink. */
  private lastNotified = 0;

  constructor(inner: Sink<ConformanceRecord>, control: ScenarioControl) {
    this.inner = inner;
    this.control = control;
  }
  get guarantee() {
    return this.inner.guarantee;
  }
  get capabilities() {
    return this.inner.capabilities;
  }

  async open(context: SinkContext): Promise<void> {
    this.subtask = context.subtask;
    const previous = context.previousParallelism;
    const restoredFrom: number[] = [];
    // The runtime's rule (docs/design.md §2): old subtask j's state goes to new subtask j mod parallelism.
    if (previous !== undefined && context.restoredStates.length > 0) {
      for (let j = 0; j < previous; j++) if (j % context.parallelism === context.subtask) restoredFrom.push(j);
    }
    const pendingFrom = restoredFrom.filter((_, k) => pendingIn(context.restoredStates[k]) > 0);
    const waitedFor = this.openFirst(context);
    if (waitedFor.length > 0) await this.control.waitOpened(waitedFor);
    this.control.journal({
      e: "open",
      pid: process.pid,
      thread: threadId,
      subtask: context.subtask,
      parallelism: context.parallelism,
      previousParallelism: previous ?? null,
      restoredCheckpointId: context.restoredCheckpointId ?? null,
      restoredFrom,
      restoredPending: context.restoredStates.reduce<number>((n, s) => n + pendingIn(s), 0),
      pendingFrom,
      waitedFor,
    });
    let ok = false;
    try {
      await this.control.track("open", () => this.inner.open(context));
      ok = true;
    } finally {
      // Also when the open failed: a subtask waiting for this one must not wait forever.
      this.control.journal({ e: "opened", pid: process.pid, subtask: context.subtask, ok });
    }
  }

  /** The subtasks whose open must return before this one's starts, by the run's `openOrder`. */
  private openFirst(context: SinkContext): number[] {
    const order = this.control.config.openOrder;
    if (order === undefined || context.parallelism < 2) return [];
    if (order === "cleanup-first") return context.subtask === 0 ? [] : [0];
    if (context.subtask !== 0) return [];
    return Array.from({ length: context.parallelism - 1 }, (_, k) => k + 1);
  }

  writeBatch(batch: Batch<ConformanceRecord>): void | Promise<void> {
    const values = batch.values;
    for (let i = 0; i < values.length; i++) {
      const id = (values[i] as ConformanceRecord).id;
      const lane = id % LANES;
      const range = this.lanes.get(lane);
      if (range) range[1] = id;
      else this.lanes.set(lane, [id, id]);
    }
    return this.control.track("writeBatch", () => this.inner.writeBatch(batch));
  }

  async snapshotState(checkpointId: number): Promise<unknown> {
    const { config } = this.control;
    const lanes = Object.fromEntries([...this.lanes].map(([lane, range]) => [String(lane), range] as const));
    this.lanes = new Map();
    // Another task is slow: the checkpoint is declined after the other subtasks pre-committed.
    if (checkpointId === config.declineCheckpoint && this.subtask === 0) await sleep(config.checkpointTimeoutMs * 2);
    else if (config.slowSnapshotMs && this.subtask === 0) {
      await sleep(config.slowSnapshotMs);
      const after = config.killInSlowSnapshotAfter;
      if (after !== undefined && this.control.completed >= after) this.control.die("snapshotState", 0, false);
    }
    // The zombie scenario: paused holding an open transaction with records in it; resumed
    // after a successor took the shard, this snapshot is the zombie's first write.
    const zombie = this.control.zombieDue(Object.keys(lanes).length > 0);
    if (zombie) this.control.pauseAsZombie(checkpointId);
    let state: unknown;
    try {
      state = await this.control.track("snapshotState", () => this.inner.snapshotState(checkpointId));
    } catch (error) {
      if (zombie) this.control.resumedAsZombie({ took: false, code: errorCode(error) });
      throw error;
    }
    if (zombie) this.control.resumedAsZombie({ took: true });
    if (lanes && Object.keys(lanes).length > 0) this.preCommitted.push(checkpointId);
    this.control.journal({
      e: "snapshot",
      pid: process.pid,
      subtask: this.subtask,
      checkpointId,
      lanes,
      at: Date.now(),
    });
    // complete(n) reaches the sink only now, after snapshot(n+1) pre-committed.
    for (const [held, deliver] of [...this.held]) {
      if (held >= checkpointId) continue;
      this.held.delete(held);
      await deliver();
    }
    return state;
  }

  notifyCheckpointComplete(checkpointId: number): Promise<void> {
    // On a worker thread this is how the thread's control learns of a completion (before the
    // commit, as the coordinator's event comes before it on one event loop).
    this.control.sawComplete(checkpointId);
    const { config } = this.control;
    if (config.notifications === "after-next-barrier") {
      return new Promise<void>((resolve, reject) => {
        const deliver = async () => {
          clearTimeout(fallback);
          try {
            await this.deliver(checkpointId);
            this.control.lateNotified(this.subtask, checkpointId);
            resolve();
          } catch (error) {
            reject(error);
          }
        };
        // The last checkpoint has no next barrier: deliver it anyway after a while.
        const fallback = setTimeout(() => {
          if (this.held.delete(checkpointId)) deliver();
        }, 2000);
        this.held.set(checkpointId, deliver);
      });
    }
    return this.notifyNow(checkpointId);
  }

  private async notifyNow(checkpointId: number): Promise<void> {
    const { config } = this.control;
    if (config.holdCommitsMs) await sleep(config.holdCommitsMs);
    if (config.notifications === "late") return this.notifyOutOfOrder(checkpointId);
    await this.deliver(checkpointId);
    if (config.notifications === "duplicate") await this.inner.notifyCheckpointComplete(checkpointId);
  }

  /**
   * "late": an odd checkpoint's notification waits for the next one, which reaches the sink
   * first with the odd one's transaction still pending (subsumed), and arrives after it;
   * every notification is followed by repeats of the two before it.
   */
  private notifyOutOfOrder(checkpointId: number): Promise<void> {
    if (checkpointId % 2 === 1 && this.heldLate === undefined) {
      return new Promise<void>((resolve, reject) => {
        const release = async () => {
          clearTimeout(fallback);
          this.heldLate = undefined;
          await this.deliver(checkpointId).then(resolve, reject);
        };
        // The last checkpoint has no next one: deliver it anyway after a while.
        const fallback = setTimeout(() => {
          if (this.heldLate?.checkpointId === checkpointId) release();
        }, 500);
        this.heldLate = { checkpointId, release };
      });
    }
    return (async () => {
      await this.deliver(checkpointId);
      const held = this.heldLate;
      if (held && held.checkpointId < checkpointId) await held.release();
      for (const late of [checkpointId - 1, checkpointId - 2])
        if (late > 0) await this.inner.notifyCheckpointComplete(late);
    })();
  }

  private async deliver(checkpointId: number): Promise<void> {
    // Older pre-committed checkpoints not yet known completed: this notification subsumes them.
    const older = this.preCommitted.filter((id) => id < checkpointId && id > this.lastNotified);
    this.lastNotified = Math.max(this.lastNotified, checkpointId);
    this.preCommitted = this.preCommitted.filter((id) => id > this.lastNotified);
    await this.control.track("notifyCheckpointComplete", () => this.inner.notifyCheckpointComplete(checkpointId));
    this.control.journal({
      e: "notified",
      pid: process.pid,
      subtask: this.subtask,
      checkpointId,
      ...(older.length > 0 ? { older } : {}),
    });
  }

  notifyCheckpointAborted = (checkpointId: number) => this.inner.notifyCheckpointAborted(checkpointId);
  close = () => this.inner.close();
}
