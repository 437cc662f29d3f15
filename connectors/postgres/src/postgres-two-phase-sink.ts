import {
  type Batch,
  type CommitContext,
  ConfigurationError,
  fencedSubtaskIndexes,
  type LingeringContext,
  RecordWriteError,
  type SinkCapabilities,
  SinkNotOpenError,
  type TransactionContext,
  TransactionLostError,
  TwoPhaseCommitSink,
} from "@exactly/core";
import { requirePositiveInteger } from "@exactly/core/internal";
import { Bookkeeping } from "./bookkeeping.ts";
import type { DeadLetterTable } from "./dead-letters.ts";
import { SinkFences } from "./fences.ts";
import { DEFAULT_COMMIT_RETRY, type PostgresSinkOptions, resolvePostgresOptions } from "./options.ts";
import { pgConnect } from "./pg/pg-connection.ts";
import { isTransientPostgresError, type PostgresConnect, type PostgresConnection } from "./postgres-connection.ts";
import { commitPrepared, gidOf, listPrepared, prepare, rollbackPrepared } from "./prepared-transactions.ts";
import { RowBuffer } from "./row-buffer.ts";
import { type SetAside, writeRowsOrExplain } from "./row-writer.ts";
import { validateSinkName } from "./sql.ts";
import {
  checkNameUnusedElsewhere,
  checkPreparedTransactions,
  checkTable,
  lockSinkName,
  sessionPurpose,
} from "./startup-checks.ts";
import type { CompiledMapping } from "./table-mapping.ts";
import { WriteOuts } from "./write-outs.ts";

export interface PostgresTwoPhaseSinkOptions<T> extends PostgresSinkOptions<T> {
  /**
   * Prepared transactions one subtask may hold at once: the checkpoint waiting for its
   * commit, the next one, and one more for a declined checkpoint. `max_prepared_transactions`
   * must be at least parallelism × this (checked at open). Default 3.
   */
  readonly maxPendingCheckpoints?: number;
}

/** A checkpoint's transaction, as checkpointed: its prepared name once pre-committed. */
export interface PostgresTransaction {
  /** The subtask that wrote it: its index stays in the name after a rescale. */
  readonly subtask: number;
  /** `<name>:<subtask>:<checkpoint>`, set at pre-commit. */
  gid?: string;
}

/** A session for the sink: never cut by `idle_in_transaction_session_timeout` between two batches. */
async function openSession(connect: PostgresConnect, purpose: string): Promise<PostgresConnection> {
  const connection = await connect(purpose);
  await connection.query("SET idle_in_transaction_session_timeout = 0");
  return connection;
}

/**
 * The exactly-once Postgres sink on prepared transactions, on {@link TwoPhaseCommitSink}.
 * Each checkpoint's rows go into one transaction on the sink's session (COPY or unnest
 * upserts, buffered and written in bulk). At the barrier a marker row
 * `(gid, sink, subtask, checkpoint)` goes in and `PREPARE TRANSACTION '<name>:<subtask>:<n>'`
 * makes it durable and frees the session for the next checkpoint. When the checkpoint
 * completes, `COMMIT PREPARED` runs on a second connection, so a commit never waits behind
 * the next checkpoint's writes, which may wait for the prepared rows' locks.
 *
 * After a crash, recovery commits what the restored state lists (a `COMMIT PREPARED` that
 * finds nothing is settled by the marker: committed, or a loud `TransactionLostError`) and
 * rolls back this sink's other prepared transactions under the indexes it owns, including
 * indexes that no longer exist after a rescale. Needs `max_prepared_transactions` > 0.
 */
export class PostgresTwoPhaseSink<T> extends TwoPhaseCommitSink<T, PostgresTransaction> {
  override readonly capabilities: SinkCapabilities = {
    rescale: true,
    abortsLingering: true,
    atomicCommits: true,
    fences: true,
  };
  private readonly connect: PostgresConnect;
  private readonly configuredName: string | undefined;
  private readonly mapping: CompiledMapping<T>;
  private readonly bookkeeping: Bookkeeping;
  private readonly flushRows: number;
  private readonly nameLockWaitMs: number;
  private readonly maxPending: number;
  private readonly deadLetters: DeadLetterTable | undefined;
  private sinkName = "";
  /** The session the open transaction lives on; it also holds the sink-name lock. */
  private session: PostgresConnection | undefined;
  /** Commits, recovery and lingering cleanup. */
  private committer: PostgresConnection | undefined;
  private rows: RowBuffer<T>;
  /** Whether the open transaction has sent BEGIN (it does at its first write-out). */
  private begun = false;
  /** The write-out on its way to the server: the next rows are encoded meanwhile. */
  private readonly writeOuts = new WriteOuts();
  /** Checkpoints this subtask prepared and has not committed yet. */
  private readonly prepared = new Set<number>();
  /** In a sharded job: the fences every prepared transaction checks (I9). */
  private fences: SinkFences | undefined;

  constructor(options: PostgresTwoPhaseSinkOptions<T>) {
    super({ commitRetry: options.commitRetry ?? DEFAULT_COMMIT_RETRY });
    const resolved = resolvePostgresOptions(options);
    this.connect = pgConnect(options.connection);
    this.configuredName = options.name === undefined ? undefined : validateSinkName("name", options.name);
    this.mapping = resolved.mapping;
    this.bookkeeping = new Bookkeeping(resolved.bookkeepingSchema);
    this.flushRows = resolved.flushRows;
    this.nameLockWaitMs = resolved.nameLockWaitMs;
    this.maxPending = requirePositiveInteger("maxPendingCheckpoints", options.maxPendingCheckpoints ?? 3);
    this.deadLetters = resolved.deadLetters;
    this.rows = new RowBuffer(this.mapping, this.deadLetters !== undefined);
  }

  /** The name the sink's prepared transactions, markers and lock go by. */
  get name(): string {
    return this.sinkName;
  }

  protected override async initialize(restored: LingeringContext<PostgresTransaction>): Promise<void> {
    this.sinkName = this.configuredName ?? validateSinkName("name (the sink's name in the job)", restored.sinkId);
    this.session = await openSession(this.connect, sessionPurpose(this.sinkName, restored.subtask));
    // A write that waits for a lock of a transaction this sink prepared (a declined
    // checkpoint's, holding the same upsert keys) waits for a checkpoint that cannot complete
    // while it waits. Past the checkpoint timeout it fails instead, as transient: the job
    // restarts, recovery rolls that transaction back, and its records are replayed.
    await this.session.query(`SET lock_timeout = ${Math.max(1, Math.ceil(this.context.checkpointTiming.timeoutMs))}`);
    const session = this.session;
    const ownership = this.context.ownership;
    const fences = ownership && new SinkFences(this.bookkeeping.schema, this.sinkName, ownership);
    this.fences = fences;
    await fences?.ensure(session);
    // Before recovery touches anything: an owner older than the newest ends no session and
    // rolls nothing back.
    const indexes = fencedSubtaskIndexes(this.context);
    await lockSinkName(
      session,
      this.sinkName,
      restored.subtask,
      this.nameLockWaitMs,
      fences && { check: () => fences.assertNewest(session, indexes), ended: (pid) => this.endedEarlierOwner(pid) },
    );
    await fences?.assertCurrent(session, indexes);
    await checkNameUnusedElsewhere(session, this.sinkName);
    await checkPreparedTransactions(session, restored.parallelism, this.maxPending);
    await checkTable(session, this.mapping);
    await this.bookkeeping.ensureMarkers(session);
    await this.deadLetters?.ensure(session);
  }

  private endedEarlierOwner(pid: number): void {
    this.context.logger.warn("ended the session of an earlier owner of this shard that still held the sink's name", {
      sink: this.sinkName,
      subtask: this.context.subtask,
      pid,
    });
  }

  override isTransient(error: unknown): boolean {
    return isTransientPostgresError(error);
  }

  private get openSession(): PostgresConnection {
    if (!this.session) throw new SinkNotOpenError("postgres session");
    return this.session;
  }

  /** The commit connection, opened again if the last one was lost (the retry of a commit comes here). */
  private async commitConnection(): Promise<PostgresConnection> {
    if (!this.committer || this.committer.broken) {
      await this.committer?.close();
      this.committer = undefined;
      this.committer = await openSession(this.connect, `${this.sinkName}:${this.context.subtask}:commit`);
    }
    return this.committer;
  }

  protected beginTransaction(ctx: TransactionContext): PostgresTransaction {
    // BEGIN waits for the first write-out: a checkpoint without records opens nothing.
    this.begun = false;
    return { subtask: ctx.subtask };
  }

  protected write(_txn: PostgresTransaction, batch: Batch<T>): void | Promise<void> {
    this.rows.add(batch);
    if (this.rows.size >= this.flushRows) return this.writeOuts.start(() => this.writeOut());
  }

  /** Writes what is buffered into the open transaction; a refused row fails with its position. */
  private async writeOut(): Promise<void> {
    const rows = this.rows.take();
    const session = this.openSession;
    if (!this.begun) {
      await session.query("BEGIN");
      this.begun = true;
    }
    const setAside: SetAside | undefined = this.deadLetters && {
      table: this.deadLetters,
      sink: this.sinkName,
      subtask: this.context.subtask,
      logger: this.context.logger,
    };
    try {
      await writeRowsOrExplain(session, this.mapping, rows, setAside);
    } catch (error) {
      // A refused row, or a privilege the role lacks, was explained after rolling the transaction back.
      if (error instanceof RecordWriteError || error instanceof ConfigurationError) this.begun = false;
      throw error;
    }
  }

  protected async preCommit(txn: PostgresTransaction, { checkpointId }: CommitContext): Promise<void> {
    await this.writeOuts.settle();
    await this.writeOut();
    const session = this.openSession;
    const gid = gidOf(this.sinkName, txn.subtask, checkpointId);
    // Markers below n can go: this transaction commits only once checkpoint n completes, and
    // no checkpoint restorable from then on lists an older transaction of this subtask.
    // Deleted in here, they stay if n never completes. Only while nothing else of this subtask
    // is pending: a pending prepared transaction deleted some of the same rows and holds their
    // locks until a checkpoint completes, which this one, waiting, would never let happen.
    if (this.prepared.size === 0) {
      await this.bookkeeping.deleteMarkersBefore(session, this.sinkName, txn.subtask, checkpointId);
    }
    // A newer owner's fence refuses it; the share lock makes a raise wait until this transaction ends.
    await this.fences?.check(session, txn.subtask);
    await this.bookkeeping.insertMarker(session, gid, this.sinkName, txn.subtask, checkpointId);
    await prepare(session, gid);
    this.begun = false;
    txn.gid = gid;
    this.prepared.add(checkpointId);
  }

  protected async commit(txn: PostgresTransaction, { checkpointId }: CommitContext): Promise<void> {
    const gid = txn.gid;
    if (!gid) throw new TransactionLostError(checkpointId, "a transaction to commit was never prepared");
    const connection = await this.commitConnection();
    // Committed now, or gone: then the marker row, committed with it, tells which.
    if (!(await commitPrepared(connection, gid)) && !(await this.bookkeeping.hasMarker(connection, gid))) {
      throw new TransactionLostError(
        checkpointId,
        `prepared transaction ${gid} no longer exists and its marker is not in ${this.bookkeeping.markers}: it was rolled back outside this sink (ROLLBACK PREPARED by an operator, or another sink under the same name)`,
      );
    }
    this.prepared.delete(checkpointId);
  }

  protected async abort(txn: PostgresTransaction): Promise<void> {
    if (txn.gid) {
      await rollbackPrepared(await this.commitConnection(), txn.gid);
      return;
    }
    // The open transaction: rolled back with its session if that is gone.
    await this.writeOuts.settle().catch(() => {});
    this.rows.take();
    if (this.begun && this.session && !this.session.broken) await this.session.query("ROLLBACK");
    this.begun = false;
  }

  protected override async recoverAndAbort(_txn: PostgresTransaction): Promise<void> {
    // Open (not prepared) at the checkpoint: it ended with its session. If it was prepared
    // later, for a later checkpoint, it is lingering and abortLingering rolls it back.
  }

  protected override async abortLingering(restored: LingeringContext<PostgresTransaction>): Promise<void> {
    // In a sharded job on the session that holds the name lock, as rollBackLingering says.
    const connection = this.fences ? this.openSession : await this.commitConnection();
    let rolledBack = await this.rollBackLingering(restored);
    // A fresh start numbers checkpoints from 1 again: older markers of these indexes would lie.
    let forgotten = 0;
    if (restored.restoredCheckpointId === 0) {
      await this.fences?.assertCurrent(connection, fencedSubtaskIndexes(this.context));
      forgotten = await this.bookkeeping.forget(connection, "markers", this.sinkName, restored.ownsSubtaskIndex);
    }
    // The last step of recovery, before the new transaction begins (I9): from now on an older
    // owner's transaction under these indexes is refused, and one it prepared meanwhile holds
    // the lock the raise waits for, so it is rolled back and the raise tried again.
    const fences = this.fences;
    if (fences) {
      await fences.raise(
        this.openSession,
        fencedSubtaskIndexes(this.context),
        restored.subtask,
        async () => {
          rolledBack += await this.rollBackLingering(restored);
        },
        (pid) => this.endedEarlierOwner(pid),
      );
    }
    if (rolledBack > 0 || forgotten > 0) {
      this.context.logger.info(`rolled back ${rolledBack} lingering prepared transaction(s)`, {
        sink: this.sinkName,
        subtask: restored.subtask,
        ...(forgotten > 0 ? { markersOfAnEarlierRunForgotten: forgotten } : {}),
      });
    }
  }

  /**
   * Rolls back this sink's prepared transactions under owned indexes that no restored state
   * references. In a sharded job on the session that holds the name lock, each after reading
   * the fences again: an owner paused in its recovery past its successor's takeover finds its
   * session ended, or the fences raised, and rolls back none of the successor's transactions.
   */
  private async rollBackLingering(restored: LingeringContext<PostgresTransaction>): Promise<number> {
    const fences = this.fences;
    const connection = fences ? this.openSession : await this.commitConnection();
    const referenced = new Set(restored.referenced.flatMap((txn) => txn.gid ?? []));
    let rolledBack = 0;
    for (const prepared of await listPrepared(connection, this.sinkName)) {
      if (!restored.ownsSubtaskIndex(prepared.subtask) || referenced.has(prepared.gid)) continue;
      await fences?.assertCurrent(connection, fencedSubtaskIndexes(this.context));
      await rollbackPrepared(connection, prepared.gid);
      rolledBack++;
    }
    return rolledBack;
  }

  protected override encodeTransaction(txn: PostgresTransaction): unknown {
    return txn.gid ? { subtask: txn.subtask, gid: txn.gid } : { subtask: txn.subtask };
  }

  protected override decodeTransaction(data: unknown): PostgresTransaction {
    const { subtask, gid } = data as { subtask: number; gid?: string };
    return gid ? { subtask, gid } : { subtask };
  }

  /**
   * Ends the open transaction (the base aborts it: ROLLBACK, or the session's end). Prepared
   * transactions not yet committed stay: a completed checkpoint may hold one as pre-committed
   * (its COMMIT PREPARED had not run when the job failed), and only a restart from the latest
   * checkpoint knows which to commit and which to roll back. Until then they hold their row
   * locks, so closing with any says which.
   */
  override async close(): Promise<void> {
    try {
      await super.close();
    } finally {
      await this.session?.close();
      await this.committer?.close();
      this.session = undefined;
      this.committer = undefined;
      if (this.prepared.size > 0) {
        const gids = [...this.prepared]
          .sort((a, b) => a - b)
          .map((id) => gidOf(this.sinkName, this.context.subtask, id));
        this.context.logger.warn(
          `closing with ${gids.length} prepared transaction(s) left for recovery, holding their row locks: ${gids.join(", ")}. A restart from the latest checkpoint commits those it pre-committed and rolls back the others; "exactly lingering postgres --sink ${this.sinkName} --checkpoints <location>" lists them`,
          { sink: this.sinkName, subtask: this.context.subtask, prepared: gids },
        );
      }
    }
  }
}
