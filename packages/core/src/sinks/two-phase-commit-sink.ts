import { CommitFailedError, RecordWriteError, TransactionLostError } from "../errors.ts";
import { reachFault } from "../faults/fault-points.ts";
import { DeliveryGuarantee, type SinkCapabilities } from "../guarantee.ts";
import type { Batch, RecordPosition } from "../records.ts";
import { isTransientByDefault, type RetryOptions, withRetry } from "./retry.ts";
import type { Sink, SinkContext } from "./sink.ts";

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

/** What a new transaction is begun for, so implementations can name it deterministically. */
export interface TransactionContext {
  readonly sinkId: string;
  readonly subtask: number;
  /** The checkpoint this transaction is expected to be pre-committed in; unique per subtask. */
  readonly checkpointId: number;
}

/** What `abortLingering` needs to tell lingering work from work the restored state owns. */
export interface LingeringContext<TXN> {
  readonly sinkId: string;
  readonly subtask: number;
  readonly parallelism: number;
  readonly previousParallelism: number | undefined;
  /** 0 on a fresh start. Work named with a higher checkpoint id was begun after it. */
  readonly restoredCheckpointId: number;
  /** Every transaction any restored subtask state references (pending or open): never touch these. */
  readonly referenced: readonly TXN[];
  /**
   * Whether this subtask cleans up subtask index `index`: its own, and subtask 0 also
   * takes every index at or above the current parallelism (left by a larger old run).
   */
  ownsSubtaskIndex(index: number): boolean;
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

/** The state a two-phase-commit sink subtask checkpoints. */
export interface TwoPhaseCommitState {
  readonly pending: ReadonlyArray<{
    readonly checkpointId: number;
    readonly txn: unknown;
    readonly startedAt: number;
    readonly records: number;
  }>;
  readonly current: { readonly txn: unknown; readonly startedAt: number } | undefined;
}

/**
 * A sink that writes each checkpoint's records in one external transaction: pre-committed
 * at the barrier, committed only once the checkpoint is durable (DESIGN §2 steps 3–5).
 *
 * The lifecycle lives here; a subclass only talks to its external system:
 * `beginTransaction`, `write`, `preCommit`, `commit`, `abort`, and for recovery
 * `recoverAndCommit`, `recoverAndAbort`, `abortLingering`. Commit and abort must be
 * idempotent (I5): recovery may repeat a commit that already happened.
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

  // ---- what a subclass implements -------------------------------------------------

  protected abstract beginTransaction(context: TransactionContext): Promise<TXN> | TXN;
  /** Writes one record into `txn`. Return a promise only if the write is truly async. */
  protected abstract write(txn: TXN, record: IN, position: RecordPosition): void | Promise<void>;
  /** Makes `txn` durable and ready to commit; no writes follow. */
  protected abstract preCommit(txn: TXN): Promise<void>;
  protected abstract commit(txn: TXN): Promise<void>;
  protected abstract abort(txn: TXN): Promise<void>;

  /** Commits a transaction a previous process pre-committed. Must succeed if it was already committed. */
  protected recoverAndCommit(txn: TXN): Promise<void> {
    return this.commit(txn);
  }

  /** Aborts the transaction that was open when the restored checkpoint was taken. */
  protected recoverAndAbort(txn: TXN): Promise<void> {
    return this.abort(txn);
  }

  /** Aborts work of this sink that no restored state references (I4). */
  protected abortLingering(_context: LingeringContext<TXN>): Promise<void> {
    return Promise.resolve();
  }

  /** Writes a batch. Override for a bulk path; throw {@link RecordWriteError} to name a record. */
  protected async writeRecords(txn: TXN, records: readonly IN[], positions: readonly RecordPosition[]): Promise<void> {
    for (let i = 0; i < records.length; i++) {
      const position = positions[i] as RecordPosition;
      try {
        const result = this.write(txn, records[i] as IN, position);
        if (result) await result;
      } catch (error) {
        throw error instanceof RecordWriteError ? error : new RecordWriteError(position, error);
      }
    }
  }

  protected encodeTransaction(txn: TXN): unknown {
    return txn;
  }

  protected decodeTransaction(data: unknown): TXN {
    return data as TXN;
  }

  protected isTransient(error: unknown): boolean {
    return isTransientByDefault(error);
  }

  protected get context(): SinkContext {
    if (!this.ctx) throw new Error("sink is not open");
    return this.ctx;
  }

  // ---- the checkpoint hooks -----------------------------------------------------------

  async open(context: SinkContext): Promise<void> {
    this.ctx = context;
    this.lastCheckpointId = context.restoredCheckpointId ?? 0;
    const states = context.restoredStates as TwoPhaseCommitState[];
    const restored = states.flatMap((s) => s.pending).sort((a, b) => a.checkpointId - b.checkpointId);
    for (const entry of restored) {
      const pending = { ...entry, txn: this.decodeTransaction(entry.txn) };
      await this.commitPending(pending, true);
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
    const all = context.allRestoredStates as TwoPhaseCommitState[];
    const referenced = all.flatMap((s) => [
      ...s.pending.map((p) => this.decodeTransaction(p.txn)),
      ...(s.current ? [this.decodeTransaction(s.current.txn)] : []),
    ]);
    reachFault("during-lingering-abort");
    await this.abortLingering({
      sinkId: context.sinkId,
      subtask: context.subtask,
      parallelism: context.parallelism,
      previousParallelism: context.previousParallelism,
      restoredCheckpointId: context.restoredCheckpointId ?? 0,
      referenced,
      ownsSubtaskIndex: (index) => index === context.subtask || (context.subtask === 0 && index >= context.parallelism),
    });
    this.current = await this.startTransaction();
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
    if (!current) throw new Error("sink is not open");
    current.records += batch.values.length;
    await this.writeRecords(current.txn, batch.values, batch.positions);
    reachFault("mid-write");
  }

  async snapshotState(checkpointId: number): Promise<TwoPhaseCommitState> {
    const current = this.current;
    if (!current) throw new Error("sink is not open");
    this.lastCheckpointId = checkpointId;
    // An empty transaction is neither pre-committed nor committed: it stays open for the next checkpoint.
    if (current.records > 0) {
      await this.preCommit(current.txn);
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
    };
  }

  notifyCheckpointComplete(checkpointId: number): Promise<void> {
    // Commits run one after another, in checkpoint order, but never wait for writes.
    this.commits = this.commits.then(() => this.commitUpTo(checkpointId));
    return this.commits;
  }

  async notifyCheckpointAborted(_checkpointId: number): Promise<void> {
    // The pre-committed transaction stays pending; the next completed checkpoint commits it.
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
      // Committed, but still pending in any state taken so far: recovery will commit it again (I5).
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
    try {
      await withRetry(
        () => (recovering ? this.recoverAndCommit(pending.txn) : this.commit(pending.txn)),
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
