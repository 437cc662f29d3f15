import { CommitFailedError, SinkNotOpenError, TransactionLostError } from "../errors.ts";
import { isTransientByDefault } from "../failures.ts";
import { reachFault } from "../faults/fault-points.ts";
import { DeliveryGuarantee, type SinkCapabilities } from "../guarantee.ts";
import type { Batch } from "../records.ts";
import { type LingeringContext, lingeringContext } from "./lingering-context.ts";
import { type RetryOptions, withRetry } from "./retry.ts";
import type { PendingWork, Sink, SinkContext } from "./sink.ts";

/** Options of {@link TwoPhaseCommitSink}. @public */
export interface TwoPhaseCommitSinkOptions {
  /**
   * How long the external system keeps a pre-committed transaction before it aborts it on
   * its own (Kafka's transaction.timeout.ms, for example). A pending transaction older
   * than this is reported as possible data loss. Undefined: the system has no such limit.
   */
  readonly transactionTimeoutMs?: number;
  /** Retries of commit, recoverAndCommit and recoverAndAbort on transient errors. */
  readonly commitRetry?: RetryOptions;
}

/** What a new transaction is begun for, so implementations can name it deterministically. @public */
export interface TransactionContext {
  readonly sinkId: string;
  readonly subtask: number;
  /** The checkpoint this transaction is expected to be pre-committed in; unique per subtask. */
  readonly checkpointId: number;
}

/**
 * Which checkpoint a pre-commit or commit belongs to. The base knows it; a subclass never
 * has to stash it or write it into its transaction object.
 * @public
 */
export interface CommitContext {
  /** The checkpoint whose barrier pre-commits, or whose completion commits, the transaction. */
  readonly checkpointId: number;
}

interface OpenTransaction<TXN> {
  readonly txn: TXN;
  readonly startedAt: number;
  records: number;
}

interface PendingTransaction<TXN> {
  readonly checkpointId: number;
  readonly txn: TXN;
  readonly startedAt: number;
  readonly records: number;
}

/** The state a two-phase-commit sink subtask checkpoints. @public */
export interface TwoPhaseCommitState {
  readonly pending: ReadonlyArray<{
    readonly checkpointId: number;
    readonly txn: unknown;
    readonly startedAt: number;
    readonly records: number;
  }>;
  readonly current: { readonly txn: unknown; readonly startedAt: number } | undefined;
  /** The external system's transaction timeout when the state was taken, for tools (`exactly inspect`). */
  readonly transactionTimeoutMs?: number;
}

/**
 * A sink that writes each checkpoint's records in one external transaction: pre-committed
 * at the barrier, committed only once the checkpoint is durable (docs/design.md §2, steps
 * 3–5). The guarantee is EXACTLY_ONCE; a sink that only flushes at the barrier is not a
 * two-phase-commit sink and implements {@link Sink} directly.
 *
 * The lifecycle lives here; a subclass only talks to its external system:
 * `beginTransaction`, `write` (a whole batch: bulk paths are the normal case; a sink whose
 * client takes one record at a time calls {@link writeEachRecord}), `preCommit`, `commit`,
 * `abort`, and for recovery `recoverAndCommit`, `recoverAndAbort`, `abortLingering`.
 * `initialize` runs first in `open`, with what the restored state references, for a sink
 * that must connect or size its resources before recovery. Commit and abort must be
 * idempotent (I5, docs/design.md §3): recovery may repeat a commit that already happened.
 * @public
 */
export abstract class TwoPhaseCommitSink<IN, TXN> implements Sink<IN> {
  readonly guarantee: DeliveryGuarantee = DeliveryGuarantee.EXACTLY_ONCE;
  readonly capabilities: SinkCapabilities = { rescale: true, abortsLingering: true };

  private ctx: SinkContext | undefined;
  private current: OpenTransaction<TXN> | undefined;
  /** Pre-committed transactions by checkpoint id, in checkpoint order. */
  private readonly pending = new Map<number, PendingTransaction<TXN>>();
  private lastCheckpointId = 0;
  private commits: Promise<void> = Promise.resolve();
  protected readonly options: TwoPhaseCommitSinkOptions;

  constructor(options: TwoPhaseCommitSinkOptions = {}) {
    this.options = options;
  }

  /**
   * The external system's transaction timeout, as configured (undefined: none). Public so
   * the conformance suite can hold a transaction past it without being told twice.
   */
  get transactionTimeoutMs(): number | undefined {
    return this.options.transactionTimeoutMs;
  }

  // ---- what a subclass implements -------------------------------------------------

  // #region hooks
  protected abstract beginTransaction(context: TransactionContext): Promise<TXN> | TXN;
  /**
   * Writes a batch into `txn`. Throw {@link RecordWriteError} to name a bad record
   * ({@link writeEachRecord} does it for per-record writes). Return a promise only if the
   * write is truly async.
   */
  protected abstract write(txn: TXN, batch: Batch<IN>): void | Promise<void>;
  /** Makes `txn` durable and ready to commit; no writes follow. */
  protected abstract preCommit(txn: TXN, checkpoint: CommitContext): Promise<void>;
  /** Makes `txn` visible. Idempotent (I5, docs/design.md §3). */
  protected abstract commit(txn: TXN, checkpoint: CommitContext): Promise<void>;
  protected abstract abort(txn: TXN): Promise<void>;

  /**
   * Runs first in `open`, before any recovery call, with what the restored states of every
   * old subtask reference (empty on a fresh start). Connect, check settings against the
   * server, or set up naming here.
   */
  protected initialize(_restored: LingeringContext<TXN>): Promise<void> {
    return Promise.resolve();
  }

  /** Commits a transaction a previous process pre-committed. Must succeed if it was already committed. */
  protected recoverAndCommit(txn: TXN, checkpoint: CommitContext): Promise<void> {
    return this.commit(txn, checkpoint);
  }

  /** Aborts the transaction that was open when the restored checkpoint was taken. */
  protected recoverAndAbort(txn: TXN): Promise<void> {
    return this.abort(txn);
  }

  /**
   * Aborts work of this sink that no restored state references (I4, docs/design.md §3): only work under a
   * subtask index that `restored.ownsSubtaskIndex` gives this subtask, and never anything
   * in `restored.referenced`.
   */
  protected abortLingering(_restored: LingeringContext<TXN>): Promise<void> {
    return Promise.resolve();
  }

  /**
   * In a sharded job, once the restored work is committed and before lingering work is
   * aborted: raises this subtask's fences to its epoch ({@link SinkFence.raise}, in a
   * transaction of your store), so an older owner's next checked write is refused and what
   * it wrote before is there for `abortLingering` to find (I9, docs/design.md §3). A sink
   * that fences declares `capabilities.fences`; not called outside a sharded job.
   */
  protected raiseFences(_restored: LingeringContext<TXN>): Promise<void> | void {}
  // #endregion hooks

  protected encodeTransaction(txn: TXN): unknown {
    return txn;
  }

  protected decodeTransaction(data: unknown): TXN {
    return data as TXN;
  }

  isTransient(error: unknown): boolean {
    return isTransientByDefault(error);
  }

  protected get context(): SinkContext {
    if (!this.ctx) throw new SinkNotOpenError();
    return this.ctx;
  }

  // ---- the checkpoint hooks -----------------------------------------------------------

  /** Recovery (docs/design.md §2): recommit restored pending work, abort the rest, begin. */
  async open(context: SinkContext): Promise<void> {
    this.ctx = context;
    this.lastCheckpointId = context.restoredCheckpointId ?? 0;
    const restored = lingeringContext(context, this.referencedBy(context.allRestoredStates as TwoPhaseCommitState[]));
    await this.initialize(restored);
    const states = context.restoredStates as TwoPhaseCommitState[];
    const pending = states.flatMap((s) => s.pending).sort((a, b) => a.checkpointId - b.checkpointId);
    for (const entry of pending) {
      await this.commitPending({ ...entry, txn: this.decodeTransaction(entry.txn) }, true);
      reachFault("during-recovery-commit");
    }
    for (const state of states) {
      if (state.current) {
        const txn = this.decodeTransaction(state.current.txn);
        await withRetry(
          () => this.recoverAndAbort(txn),
          (e) => this.isTransient(e),
          this.options.commitRetry,
        );
      }
    }
    // Raised before the cleanup looks for lingering work: an older owner still running is
    // refused from here on, and whatever it did before is there for the cleanup to find.
    if (context.ownership) await this.raiseFences(restored);
    reachFault("during-lingering-abort");
    await this.abortLingering(restored);
    // A renamed sink's old name may have begun work after the checkpoint too (I10).
    if (context.formerSinkId !== undefined) await this.abortLingering({ ...restored, sinkId: context.formerSinkId });
    this.current = await this.startTransaction();
  }

  /** Every transaction the given states reference, pending or open. */
  private referencedBy(states: readonly TwoPhaseCommitState[]): TXN[] {
    return states.flatMap((s) => [
      ...s.pending.map((p) => this.decodeTransaction(p.txn)),
      ...(s.current ? [this.decodeTransaction(s.current.txn)] : []),
    ]);
  }

  private async startTransaction(): Promise<OpenTransaction<TXN>> {
    const ctx = this.context;
    const txn = await this.beginTransaction({
      sinkId: ctx.sinkId,
      subtask: ctx.subtask,
      checkpointId: this.lastCheckpointId + 1,
    });
    reachFault("after-begin");
    return { txn, startedAt: Date.now(), records: 0 };
  }

  async writeBatch(batch: Batch<IN>): Promise<void> {
    const current = this.current;
    if (!current) throw new SinkNotOpenError();
    current.records += batch.values.length;
    const result = this.write(current.txn, batch);
    if (result) await result;
    reachFault("mid-write");
  }

  /** Step 3: pre-commit the open transaction, file it as pending under n, begin the next. */
  async snapshotState(checkpointId: number): Promise<TwoPhaseCommitState> {
    const current = this.current;
    if (!current) throw new SinkNotOpenError();
    this.lastCheckpointId = checkpointId;
    // An empty transaction is neither pre-committed nor committed: it stays open for the next checkpoint.
    if (current.records > 0) {
      await this.preCommit(current.txn, { checkpointId });
      reachFault("after-pre-commit");
      this.pending.set(checkpointId, { checkpointId, ...current });
      this.current = await this.startTransaction();
    }
    this.reportOverdue();
    const open = this.current as OpenTransaction<TXN>;
    return {
      pending: [...this.pending.values()].map((p) => ({
        checkpointId: p.checkpointId,
        txn: this.encodeTransaction(p.txn),
        startedAt: p.startedAt,
        records: p.records,
      })),
      current: { txn: this.encodeTransaction(open.txn), startedAt: open.startedAt },
      ...(this.options.transactionTimeoutMs === undefined
        ? {}
        : { transactionTimeoutMs: this.options.transactionTimeoutMs }),
    };
  }

  pendingWork(): PendingWork {
    const oldest = this.pending.values().next().value;
    return { count: this.pending.size, oldestStartedAt: oldest?.startedAt };
  }

  /** Step 5: commit every pending transaction up to n, in checkpoint order. */
  notifyCheckpointComplete(checkpointId: number): Promise<void> {
    // Commits run one after another, in checkpoint order, but never wait for writes.
    this.commits = this.commits.then(() => this.commitUpTo(checkpointId));
    return this.commits;
  }

  /** Step 6: a declined checkpoint's pre-committed transaction stays pending. */
  async notifyCheckpointAborted(_checkpointId: number): Promise<void> {
    // The next completed checkpoint commits it.
  }

  async close(): Promise<void> {
    await this.commits.catch(() => {});
    const current = this.current;
    this.current = undefined;
    if (current) await this.abort(current.txn);
  }

  // ---- internals ------------------------------------------------------------------------

  private async commitUpTo(checkpointId: number): Promise<void> {
    for (const [id, pending] of this.pending) {
      if (id > checkpointId) break;
      await this.commitPending(pending, false);
      // Committed, but still pending in any state taken so far: recovery will commit it again (I5, docs/design.md §3).
      reachFault("mid-commit");
      this.pending.delete(id);
    }
  }

  private async commitPending(pending: PendingTransaction<TXN>, recovering: boolean): Promise<void> {
    const age = Date.now() - pending.startedAt;
    const timeout = this.options.transactionTimeoutMs;
    const overdue = timeout !== undefined && age > timeout;
    if (overdue) {
      this.context.logger.warn("committing a transaction older than the transaction timeout: possible data loss", {
        sink: this.context.sinkId,
        subtask: this.context.subtask,
        checkpointId: pending.checkpointId,
        ageMs: age,
        transactionTimeoutMs: timeout,
      });
    }
    const checkpoint: CommitContext = { checkpointId: pending.checkpointId };
    try {
      await withRetry(
        () => (recovering ? this.recoverAndCommit(pending.txn, checkpoint) : this.commit(pending.txn, checkpoint)),
        (e) => this.isTransient(e),
        this.options.commitRetry,
      );
    } catch (error) {
      if (error instanceof TransactionLostError) throw error;
      if (overdue) {
        throw new TransactionLostError(
          pending.checkpointId,
          `commit failed after the transaction outlived transactionTimeoutMs (${timeout} ms, age ${age} ms)`,
          { cause: error },
        );
      }
      throw new CommitFailedError(pending.checkpointId, error);
    }
  }

  private reportOverdue(): void {
    const timeout = this.options.transactionTimeoutMs;
    if (timeout === undefined) return;
    const now = Date.now();
    for (const pending of this.pending.values()) {
      if (now - pending.startedAt > timeout) {
        this.context.logger.warn("pending transaction outlived the transaction timeout: possible data loss", {
          sink: this.context.sinkId,
          subtask: this.context.subtask,
          checkpointId: pending.checkpointId,
          ageMs: now - pending.startedAt,
        });
      }
    }
  }
}
