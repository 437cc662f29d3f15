import type { LogStore } from "../checkpoint/checkpoint-storage.ts";
import { CommitFailedError, RecordWriteError, SinkNotOpenError } from "../errors.ts";
import { isTransientByDefault } from "../failures.ts";
import { reachFault } from "../faults/fault-points.ts";
import { DeliveryGuarantee, type SinkCapabilities } from "../guarantee.ts";
import type { Batch, RecordPosition } from "../records.ts";
import { lingeringContext } from "./lingering-context.ts";
import { ReplayBacklog } from "./replay-backlog.ts";
import { type RetryOptions, withRetry } from "./retry.ts";
import type { PendingWork, Sink, SinkContext } from "./sink.ts";

/**
 * Records which checkpoints a write-ahead sink already sent, so a replay after a crash
 * does not send them again. Keyed by the subtask that logged the records.
 * @public
 */
// #region committer
export interface CheckpointCommitter {
  open?(): Promise<void>;
  isCommitted(sinkId: string, subtask: number, checkpointId: number): Promise<boolean>;
  commit(sinkId: string, subtask: number, checkpointId: number): Promise<void>;
  close?(): Promise<void>;
}
// #endregion committer

/**
 * How records are written to the log and read back. What is read back may be another type
 * than what comes in (`LOGGED`): a sink can log records already converted for its system
 * (rows encoded for the database), so a record that cannot be converted fails at the write,
 * with its position, and not at the commit.
 * @public
 */
export interface RecordCodec<T, LOGGED = T> {
  /**
   * One line; throwing fails the job with a `RecordWriteError` naming the record's position.
   * The position is passed for a sink that logs it beside the record, so an error at commit
   * can still name it.
   */
  encode(record: T, position: RecordPosition): string;
  decode(line: string): LOGGED;
}

/** The default {@link RecordCodec}: each record a line of JSON. @public */
export const jsonCodec: RecordCodec<never> = {
  encode: (record) => JSON.stringify(record),
  decode: (line) => JSON.parse(line) as never,
};

/** Options of {@link GenericWriteAheadSink}: the committer, the log's codec, and the retries of a commit. @public */
export interface GenericWriteAheadSinkOptions<IN, LOGGED = IN> {
  readonly committer: CheckpointCommitter;
  /** How records are written to the log. Default JSON. */
  readonly codec?: RecordCodec<IN, LOGGED>;
  readonly commitRetry?: RetryOptions;
}

/**
 * One checkpoint's logged records, as the commit reads them back: in batches, decoded by the
 * codec, one batch per chunk of the log (not the whole checkpoint in memory at once); every
 * iteration reads the log again, so a retried commit starts from its first record.
 * @public
 */
export interface LoggedRecords<LOGGED> extends AsyncIterable<readonly LOGGED[]> {
  /**
   * Every record in one array: only for a system that must take a checkpoint in one call, as
   * it holds the whole checkpoint in memory (under load, more than the batches ever do).
   */
  all(): Promise<LOGGED[]>;
  /**
   * The log as written (its lines, each ending in `\n`), in chunks of bytes, undecoded: for a
   * sink whose log is its system's wire format already, so the commit passes bytes on
   * without touching each record (the Postgres write-ahead sink's COPY lines).
   */
  bytes(): AsyncIterable<Uint8Array>;
}

/** One logged checkpoint a write-ahead sink has yet to send. @public */
export interface PendingLog {
  readonly checkpointId: number;
  /** The subtask that logged the records: the committer's key even after a rescale. */
  readonly subtask: number;
  readonly log: string;
}

/** The state a write-ahead sink subtask checkpoints: the logs it has yet to send, and the log it writes. @public */
export interface WriteAheadState {
  readonly pending: readonly PendingLog[];
  readonly current: string;
}

/**
 * A sink for systems without transactions that span a checkpoint: records go to a durable
 * log in checkpoint storage, and only when the checkpoint completes are they sent
 * (`sendValues`) and marked committed (`CheckpointCommitter`).
 *
 * When the committer lives in the same store as the data, override `sendAndCommit` to
 * write data and marker in one transaction: that closes the window in which Flink's
 * version can send a checkpoint's records twice.
 *
 * The next checkpoint is logged while completed ones are sent. When sending falls behind,
 * `writeBatch` waits (backpressure, I6) until what waits to be sent is within about 1.5
 * checkpoint intervals of sending (`ReplayBacklog`), so commit latency and the logs on disk
 * stay bounded and the source runs at the external system's pace.
 * @public
 */
export abstract class GenericWriteAheadSink<IN, LOGGED = IN> implements Sink<IN> {
  readonly guarantee: DeliveryGuarantee = DeliveryGuarantee.EXACTLY_ONCE;
  readonly capabilities: SinkCapabilities = { rescale: true, abortsLingering: true };

  protected readonly committer: CheckpointCommitter;
  private readonly codec: RecordCodec<IN, LOGGED>;
  private readonly retry: RetryOptions | undefined;
  private ctx: SinkContext | undefined;
  private logs: LogStore | undefined;
  private currentLog = "";
  private currentRecords = 0;
  /** Characters of log text in the open log: its share of the replay's work to come. */
  private currentChars = 0;
  private backlog: ReplayBacklog | undefined;
  /** Whether the writer was held back yet in this attempt: said once in the log, not at every batch. */
  private heldBack = false;
  private readonly pending: PendingLog[] = [];
  /** When each pending log took its first record (this process's clock; not checkpointed). */
  private readonly pendingSince = new Map<number, number>();
  private currentLogStartedAt = 0;
  private commits: Promise<void> = Promise.resolve();

  constructor(options: GenericWriteAheadSinkOptions<IN, LOGGED>) {
    this.committer = options.committer;
    this.codec = options.codec ?? (jsonCodec as RecordCodec<IN, LOGGED>);
    this.retry = options.commitRetry;
  }

  // #region hooks
  /** Writes one checkpoint's records to the external system. */
  protected abstract sendValues(records: LoggedRecords<LOGGED>, checkpointId: number): Promise<void>;

  /**
   * Sends and marks as committed. Override to do both in one transaction. `sinkId` is the name
   * the log was written under: the sink's own, or its former name for a log restored from
   * before a rename (`SinkContext.formerSinkId`), whose mark is kept under that name.
   */
  protected async sendAndCommit(
    records: LoggedRecords<LOGGED>,
    checkpointId: number,
    subtask: number,
    sinkId: string = this.context.sinkId,
  ): Promise<void> {
    await this.sendValues(records, checkpointId);
    await this.committer.commit(sinkId, subtask, checkpointId);
  }

  /**
   * The log lines of one batch: by default one line per record, from the codec. A sink may
   * frame a batch instead (a header line before its records, say, with their positions and
   * byte length), and then reads its log back with {@link LoggedRecords.bytes}. Throws a
   * `RecordWriteError` naming the record that cannot be logged.
   */
  protected encodeBatch(batch: Batch<IN>): readonly string[] {
    const { values, positions } = batch;
    const lines = new Array<string>(values.length);
    for (let i = 0; i < values.length; i++) {
      try {
        lines[i] = this.codec.encode(values[i] as IN, positions[i] as RecordPosition);
      } catch (error) {
        throw new RecordWriteError(positions[i], error);
      }
    }
    return lines;
  }
  // #endregion hooks

  isTransient(error: unknown): boolean {
    return isTransientByDefault(error);
  }

  protected get context(): SinkContext {
    if (!this.ctx) throw new SinkNotOpenError();
    return this.ctx;
  }

  private logName(subtask: number, sequence: number): string {
    return `${subtask}-${sequence}`;
  }

  async open(context: SinkContext): Promise<void> {
    this.ctx = context;
    this.logs = context.storage.logStore(context.sinkId);
    this.backlog = new ReplayBacklog(context.checkpointTiming.intervalMs);
    await this.committer.open?.();
    // What the checkpoint holds was logged under the sink's name then: its former one after a rename (I10).
    const restoredLogs =
      context.formerSinkId === undefined ? this.logs : context.storage.logStore(context.formerSinkId);
    const restoredName = context.formerSinkId ?? context.sinkId;
    const states = context.restoredStates as WriteAheadState[];
    const pending = states.flatMap((s) => s.pending).sort((a, b) => a.checkpointId - b.checkpointId);
    for (const log of pending) {
      await this.replay(log, restoredName, restoredLogs);
      reachFault("during-recovery-commit");
    }
    reachFault("during-lingering-abort");
    // Logs no restored state references were begun after the checkpoint: drop them (I4, docs/design.md §3).
    const restored = lingeringContext(
      context,
      (context.allRestoredStates as WriteAheadState[]).flatMap((s) => s.pending.map((p) => p.log)),
    );
    const referenced = new Set(restored.referenced);
    for (const logs of restoredLogs === this.logs ? [this.logs] : [restoredLogs, this.logs]) {
      for (const name of await logs.list()) {
        if (restored.ownsSubtaskIndex(Number(name.split("-")[0])) && !referenced.has(name)) await logs.delete(name);
      }
    }
    if (restoredLogs !== this.logs) await restoredLogs.close?.();
    this.currentLog = this.logName(context.subtask, (context.restoredCheckpointId ?? 0) + 1);
    this.currentRecords = 0;
    this.currentChars = 0;
    reachFault("after-begin");
  }

  async writeBatch(batch: Batch<IN>): Promise<void> {
    const lines = this.encodeBatch(batch);
    let chars = 0;
    for (let i = 0; i < lines.length; i++) chars += (lines[i] as string).length + 1;
    const backlog = this.backlog as ReplayBacklog;
    // Held back while what waits to be sent is over its budget (I6): the source slows to sending's pace.
    if (backlog.holds) {
      if (!this.heldBack && backlog.lagging) {
        this.heldBack = true;
        this.context.logger.info(
          "sending completed checkpoints is slower than the source: holding the source back to its pace",
          { sink: this.context.sinkId, subtask: this.context.subtask },
        );
      }
      await backlog.admit(chars);
    }
    if (this.currentRecords === 0) this.currentLogStartedAt = Date.now();
    this.currentRecords += batch.values.length;
    this.currentChars += chars;
    backlog.logging(chars);
    await (this.logs as LogStore).append(this.currentLog, lines);
    reachFault("mid-write");
  }

  async snapshotState(checkpointId: number): Promise<WriteAheadState> {
    if (this.currentRecords > 0) {
      await (this.logs as LogStore).sync(this.currentLog);
      reachFault("after-pre-commit");
      this.pending.push({ checkpointId, subtask: this.context.subtask, log: this.currentLog });
      this.pendingSince.set(checkpointId, this.currentLogStartedAt);
      this.backlog?.filed(checkpointId, this.currentChars);
      this.currentLog = this.logName(this.context.subtask, checkpointId + 1);
      this.currentRecords = 0;
      this.currentChars = 0;
      reachFault("after-begin");
    }
    return { pending: [...this.pending], current: this.currentLog };
  }

  /**
   * Replays every pending log up to `checkpointId`, in order, after the replays already
   * queued; the writer goes on logging the next checkpoint meanwhile (held back only while
   * the replay lags, see `ReplayBacklog`).
   */
  notifyCheckpointComplete(checkpointId: number): Promise<void> {
    const backlog = this.backlog as ReplayBacklog;
    backlog.completed(checkpointId);
    this.commits = this.commits
      .then(async () => {
        while (this.pending.length > 0 && (this.pending[0] as PendingLog).checkpointId <= checkpointId) {
          await this.replay(this.pending[0] as PendingLog);
          // Sent and marked, still pending in any state taken so far: a replay must find the marker.
          reachFault("mid-commit");
          this.pendingSince.delete((this.pending.shift() as PendingLog).checkpointId);
        }
      })
      .catch((error: unknown) => {
        // A writer held back for this replay must not wait for it any longer.
        backlog.stop(error);
        throw error;
      });
    return this.commits;
  }

  async notifyCheckpointAborted(_checkpointId: number): Promise<void> {}

  pendingWork(): PendingWork {
    const oldest = this.pending[0];
    return { count: this.pending.length, oldestStartedAt: oldest && this.pendingSince.get(oldest.checkpointId) };
  }

  async close(): Promise<void> {
    this.backlog?.stop();
    await this.commits.catch(() => {});
    // A failed attempt closes too: a log it was appending to must not stay open across restarts.
    await this.logs?.close?.();
    await this.committer.close?.();
  }

  private async replay(
    log: PendingLog,
    sinkId = this.context.sinkId,
    logs: LogStore = this.logs as LogStore,
  ): Promise<void> {
    try {
      await withRetry(
        async () => {
          this.backlog?.replaying(log.checkpointId);
          if (await this.committer.isCommitted(sinkId, log.subtask, log.checkpointId)) return;
          await this.sendAndCommit(this.loggedRecords(logs, log.log), log.checkpointId, log.subtask, sinkId);
        },
        (e) => this.isTransient(e),
        this.retry,
      );
    } catch (error) {
      throw new CommitFailedError(log.checkpointId, error);
    }
    this.backlog?.replayed(log.checkpointId);
    await logs.delete(log.log);
  }

  private loggedRecords(logs: LogStore, name: string): LoggedRecords<LOGGED> {
    const codec = this.codec;
    const backlog = this.backlog;
    async function* batches(): AsyncGenerator<readonly LOGGED[]> {
      for await (const lines of logs.read(name)) {
        const records = new Array<LOGGED>(lines.length);
        let chars = 0;
        for (let i = 0; i < lines.length; i++) {
          const line = lines[i] as string;
          records[i] = codec.decode(line);
          chars += line.length + 1;
        }
        backlog?.read(chars);
        yield records;
      }
    }
    async function* bytes(): AsyncGenerator<Uint8Array> {
      for await (const chunk of logs.readBytes(name)) {
        backlog?.read(chunk.byteLength);
        yield chunk;
      }
    }
    return {
      [Symbol.asyncIterator]: batches,
      all: async () => {
        const records: LOGGED[] = [];
        for await (const batch of batches()) for (const record of batch) records.push(record);
        return records;
      },
      bytes,
    };
  }
}
