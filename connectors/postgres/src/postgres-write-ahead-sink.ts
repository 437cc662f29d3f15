import {
  type Batch,
  type CheckpointCommitter,
  fencedSubtaskIndexes,
  GenericWriteAheadSink,
  type LoggedRecords,
  RecordWriteError,
  type SinkCapabilities,
  type SinkContext,
} from "@exactly/core";
import { IoTurns, ownsSubtaskIndex } from "@exactly/core/internal";
import { Bookkeeping } from "./bookkeeping.ts";
import { type DeadLetterTable, encodingDeadLetter } from "./dead-letters.ts";
import { SinkFences } from "./fences.ts";
import { DEFAULT_COMMIT_RETRY, type PostgresSinkOptions, resolvePostgresOptions } from "./options.ts";
import { pgConnect } from "./pg/pg-connection.ts";
import { isTransientPostgresError, type PostgresConnect, type PostgresConnection } from "./postgres-connection.ts";
import { RowBuffer } from "./row-buffer.ts";
import { isRejection, refusedPrivilege, rejectedCopy, type SetAside, writeRowsOrExplain } from "./row-writer.ts";
import { validateSinkName } from "./sql.ts";
import { checkTable, lockSinkName, sessionPurpose } from "./startup-checks.ts";
import type { CompiledMapping } from "./table-mapping.ts";
import { decodePositions, logDeadLetter, logRows, positionOfRow, readLogEntries, rowLines } from "./write-ahead-log.ts";
import { WriteOuts } from "./write-outs.ts";

export type PostgresWriteAheadSinkOptions<T> = PostgresSinkOptions<T>;

/**
 * The exactly-once Postgres sink without prepared transactions, on
 * {@link GenericWriteAheadSink}: a checkpoint's records are logged in checkpoint storage
 * (already encoded as COPY lines, so a record that cannot be written fails at once, with its
 * position), and when the checkpoint completes its rows and the progress row
 * `(sink, subtask, checkpoint)` go into one ordinary transaction. Data and marker commit
 * together, so a checkpoint replayed after a crash finds the progress row and is skipped.
 * Needs no server setting: the choice for managed Postgres, where `max_prepared_transactions`
 * is 0.
 */
export class PostgresWriteAheadSink<T> extends GenericWriteAheadSink<T, string> {
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
  private readonly nameLockWaitMs: number;
  private readonly deadLetters: DeadLetterTable | undefined;
  private readonly flushRows: number;
  private sinkName = "";
  private subtask = 0;
  private session: PostgresConnection | undefined;
  /** In a sharded job: the fences every commit checks (I9). */
  private fences: SinkFences | undefined;

  constructor(options: PostgresWriteAheadSinkOptions<T>) {
    const resolved = resolvePostgresOptions(options);
    const committer: CheckpointCommitter = {
      isCommitted: async (sinkId, subtask, checkpointId) =>
        (await (this as PostgresWriteAheadSink<T>).committed(subtask, sinkId)) >= checkpointId,
      commit: async (sinkId, subtask, checkpointId) =>
        (this as PostgresWriteAheadSink<T>).markCommitted(subtask, checkpointId, sinkId),
    };
    // The log is framed by batch (encodeBatch) and read back as bytes; its lines, when
    // iterated, are the log's own text.
    const mapping = resolved.mapping;
    super({
      committer,
      codec: { encode: (record) => mapping.encodeLine(record), decode: (line) => line },
      commitRetry: options.commitRetry ?? DEFAULT_COMMIT_RETRY,
    });
    this.connect = pgConnect(options.connection);
    this.configuredName = options.name === undefined ? undefined : validateSinkName("name", options.name);
    this.mapping = mapping;
    this.bookkeeping = new Bookkeeping(resolved.bookkeepingSchema);
    this.nameLockWaitMs = resolved.nameLockWaitMs;
    this.deadLetters = resolved.deadLetters;
    this.flushRows = resolved.flushRows;
  }

  /**
   * A batch's log text: its rows as COPY lines under one header with their positions, and
   * each record that cannot be encoded as a dead letter (with a dead-letter table) or as the
   * job's failure, naming its position.
   */
  protected override encodeBatch(batch: Batch<T>): readonly string[] {
    const { values, positions } = batch;
    const lines: string[] = [];
    let rowPositions = positions;
    let letters: string[] | undefined;
    for (let i = 0; i < values.length; i++) {
      try {
        lines.push(this.mapping.encodeLine(values[i] as T));
      } catch (error) {
        if (!this.deadLetters) throw new RecordWriteError(positions[i], error);
        if (!letters) {
          letters = [];
          rowPositions = positions.slice(0, i);
        }
        letters.push(logDeadLetter(encodingDeadLetter(positions[i], values[i], error)));
        continue;
      }
      if (letters) rowPositions.push(positions[i] as (typeof positions)[number]);
    }
    const rows = lines.length > 0 ? logRows(lines, rowPositions) : [];
    return letters ? [...rows, ...letters] : rows;
  }

  get name(): string {
    return this.sinkName;
  }

  /** Connects, checks the table, creates the progress table, then recovers (the base replays pending logs). */
  override async open(context: SinkContext): Promise<void> {
    this.sinkName = this.configuredName ?? validateSinkName("name (the sink's name in the job)", context.sinkId);
    this.subtask = context.subtask;
    this.opening = context;
    this.fences = context.ownership && new SinkFences(this.bookkeeping.schema, this.sinkName, context.ownership);
    const session = await this.connection();
    await checkTable(session, this.mapping);
    await this.bookkeeping.ensureProgress(session);
    await this.deadLetters?.ensure(session);
    const fenced = fencedSubtaskIndexes(context);
    // Before recovery touches anything: an owner older than the newest forgets and replays nothing.
    await this.fences?.assertCurrent(session, fenced);
    if (context.restoredCheckpointId === undefined) {
      // A fresh start numbers checkpoints from 1 again: an earlier run's progress would skip them.
      const forgotten = await this.bookkeeping.forget(session, "progress", this.sinkName, (index) =>
        ownsSubtaskIndex(context.subtask, context.parallelism, index),
      );
      if (forgotten > 0) {
        context.logger.info(`fresh start: forgot the progress of ${forgotten} subtask(s) of an earlier run`, {
          sink: this.sinkName,
          subtask: context.subtask,
        });
      }
    }
    await super.open(context);
    // Restored logs are replayed and the lingering ones dropped: from now on an older owner's
    // commit under these indexes is refused (I9). The raise waits only for such a commit in
    // flight, an ordinary transaction, so nothing has to be rolled back for it.
    await this.fences?.raise(
      await this.connection(),
      fenced,
      context.subtask,
      async () => {},
      (pid) => this.endedEarlierOwner(pid),
    );
  }

  override isTransient(error: unknown): boolean {
    return isTransientPostgresError(error);
  }

  /** The sink's session, opened again (and its name lock taken again) if the last one was lost. */
  private async connection(): Promise<PostgresConnection> {
    if (!this.session || this.session.broken) {
      await this.session?.close();
      this.session = undefined;
      const session = await this.connect(sessionPurpose(this.sinkName, this.subtask));
      await session.query("SET idle_in_transaction_session_timeout = 0");
      const fences = this.fences;
      const context = this.opening;
      try {
        await fences?.ensure(session);
        await lockSinkName(
          session,
          this.sinkName,
          this.subtask,
          this.nameLockWaitMs,
          fences &&
            context && {
              // A newer owner's session is never ended: this one is fenced instead.
              check: () => fences.assertNewest(session, fencedSubtaskIndexes(context)),
              ended: (pid) => this.endedEarlierOwner(pid),
            },
        );
      } catch (error) {
        await session.close();
        throw error;
      }
      this.session = session;
    }
    return this.session;
  }

  /** Set as open starts: the name lock is taken before the base holds the context. */
  private opening: SinkContext | undefined;

  private endedEarlierOwner(pid: number): void {
    this.opening?.logger.warn("ended the session of an earlier owner of this shard that still held the sink's name", {
      sink: this.sinkName,
      subtask: this.subtask,
      pid,
    });
  }

  /**
   * The name a log's progress is kept under: the configured name, or the job's name of the
   * sink when the log was written (its former one for a log restored across a rename, I10).
   */
  private progressName(sinkId: string): string {
    return this.configuredName ?? sinkId;
  }

  private async committed(subtask: number, sinkId: string): Promise<number> {
    return this.bookkeeping.committedCheckpoint(await this.connection(), this.progressName(sinkId), subtask);
  }

  private async markCommitted(subtask: number, checkpointId: number, sinkId: string): Promise<void> {
    await this.bookkeeping.advanceProgress(await this.connection(), this.progressName(sinkId), subtask, checkpointId);
  }

  /**
   * Writes a checkpoint's logged rows into the session's open transaction (see
   * {@link sendAndCommit}). Appends go to one COPY as the log's bytes, batch after batch,
   * untouched; upserts, and appends with a dead-letter table, take each row out of its line
   * (one write-out of `flushRows` on its way while the next are taken out). Upserts keep
   * their order: a key's later row is in a later write-out, or replaces the earlier one.
   */
  protected async sendValues(records: LoggedRecords<string>): Promise<void> {
    if (!this.mapping.upserts && !this.deadLetters) await this.copyLoggedRows(records);
    else await this.writeLoggedRows(records);
  }

  private async copyLoggedRows(records: LoggedRecords<string>): Promise<void> {
    const session = await this.connection();
    let rows = 0;
    async function* bodies(): AsyncGenerator<Uint8Array> {
      for await (const entry of readLogEntries(records.bytes())) {
        if (entry.kind !== "rows") throw new Error("a dead letter in the log of a sink without a dead-letter table");
        rows += entry.rows;
        yield entry.body;
      }
    }
    try {
      await session.copyBytes(this.mapping.copyStatement, bodies());
    } catch (error) {
      if (!isRejection(error)) throw error;
      const refusal = await refusedPrivilege(session, this.mapping, undefined, error);
      if (refusal) throw refusal;
      // COPY names the line it refused: the position is read from the log again, only now.
      throw await rejectedCopy(error, rows, (line) => positionOfRow(records.bytes(), line));
    }
  }

  private async writeLoggedRows(records: LoggedRecords<string>): Promise<void> {
    const session = await this.connection();
    const setAside: SetAside | undefined = this.deadLetters && {
      table: this.deadLetters,
      sink: this.sinkName,
      subtask: this.subtask,
      logger: this.context.logger,
    };
    const buffer = new RowBuffer(this.mapping, this.deadLetters !== undefined);
    const writeOuts = new WriteOuts();
    const writeOut = () => {
      const rows = buffer.take();
      return writeOuts.start(() => writeRowsOrExplain(session, this.mapping, rows, setAside));
    };
    // Taking lines apart keeps the CPU busy: the write-out on its way needs turns of its own.
    const turns = new IoTurns();
    for await (const entry of readLogEntries(records.bytes())) {
      if (entry.kind === "dead-letter") buffer.addDeadLetter(entry.letter);
      else {
        const positions = decodePositions(entry.positions);
        const lines = rowLines(entry);
        for (let i = 0; i < lines.length; i++) buffer.addLine(lines[i] as string, positions[i]);
      }
      if (buffer.size >= this.flushRows) await writeOut();
      else if (turns.due) await turns.take();
    }
    await writeOut();
    await writeOuts.settle();
  }

  /**
   * Rows and progress in one transaction. The progress row is read under a row lock first:
   * a checkpoint already committed (a replay, or a retry after a connection lost at COMMIT,
   * whose outcome only the server knows) is skipped.
   */
  protected override async sendAndCommit(
    records: LoggedRecords<string>,
    checkpointId: number,
    subtask: number,
    sinkId: string,
  ): Promise<void> {
    const name = this.progressName(sinkId);
    const session = await this.connection();
    await session.query("BEGIN");
    try {
      // Under the fence's share lock: a newer owner's raise waits until this commit ends.
      await this.fences?.check(session, this.subtask);
      const committed = await this.bookkeeping.committedCheckpoint(session, name, subtask, true);
      if (committed >= checkpointId) {
        await session.query("ROLLBACK");
        return;
      }
      await this.sendValues(records);
      await this.bookkeeping.advanceProgress(session, name, subtask, checkpointId);
      await session.query("COMMIT");
    } catch (error) {
      if (!session.broken) await session.query("ROLLBACK").catch(() => {});
      throw error;
    }
  }

  override async close(): Promise<void> {
    try {
      await super.close();
    } finally {
      await this.session?.close();
      this.session = undefined;
    }
  }
}
