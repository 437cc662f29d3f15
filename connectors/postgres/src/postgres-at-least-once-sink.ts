import {
  type Batch,
  ConfigurationError,
  DeliveryGuarantee,
  FlushingSink,
  fencedSubtaskIndexes,
  RecordWriteError,
  type SinkCapabilities,
  type SinkContext,
  SinkNotOpenError,
} from "@exactly/core";
import type { DeadLetterTable } from "./dead-letters.ts";
import { SinkFences } from "./fences.ts";
import { type PostgresSinkOptions, resolvePostgresOptions } from "./options.ts";
import { pgConnect } from "./pg/pg-connection.ts";
import { isTransientPostgresError, type PostgresConnection } from "./postgres-connection.ts";
import { RowBuffer } from "./row-buffer.ts";
import { type SetAside, writeRowsOrExplain } from "./row-writer.ts";
import { checkTable } from "./startup-checks.ts";
import type { CompiledMapping } from "./table-mapping.ts";
import { WriteOuts } from "./write-outs.ts";

export type PostgresAtLeastOnceSinkOptions<T> = Omit<PostgresSinkOptions<T>, "name" | "nameLockWaitMs">;

/**
 * The at-least-once Postgres sink: rows are written on the same bulk paths, each write-out
 * committed at once, and the barrier waits until everything before it is committed. A crash
 * replays what came after the last checkpoint, so appends may show duplicates (upserts
 * absorb them). No prepared transactions, no bookkeeping tables; in a sharded job, the
 * fences (`fences.ts`): an old owner's upsert after its successor's would leave a key at an
 * older value for good, which no replay absorbs.
 */
export class PostgresAtLeastOnceSink<T> extends FlushingSink<T> {
  readonly guarantee = DeliveryGuarantee.AT_LEAST_ONCE;
  override readonly capabilities: SinkCapabilities = { rescale: true, abortsLingering: false, fences: true };
  private readonly options: PostgresAtLeastOnceSinkOptions<T>;
  private readonly mapping: CompiledMapping<T>;
  private readonly bookkeepingSchema: string;
  private readonly flushRows: number;
  private readonly rows: RowBuffer<T>;
  private readonly deadLetters: DeadLetterTable | undefined;
  private setAside: SetAside | undefined;
  private session: PostgresConnection | undefined;
  private readonly writeOuts = new WriteOuts();
  /** In a sharded job: the fence every write-out checks, and the index it checks (I9). */
  private fenced: { readonly fences: SinkFences; readonly subtask: number } | undefined;

  constructor(options: PostgresAtLeastOnceSinkOptions<T>) {
    super();
    this.options = options;
    const resolved = resolvePostgresOptions(options);
    this.mapping = resolved.mapping;
    this.bookkeepingSchema = resolved.bookkeepingSchema;
    this.flushRows = resolved.flushRows;
    this.deadLetters = resolved.deadLetters;
    this.rows = new RowBuffer(this.mapping, this.deadLetters !== undefined);
  }

  async open(context: SinkContext): Promise<void> {
    this.session = await pgConnect(this.options.connection)(`${context.sinkId}:${context.subtask}`);
    await checkTable(this.session, this.mapping);
    if (this.deadLetters) {
      await this.deadLetters.ensure(this.session);
      this.setAside = {
        table: this.deadLetters,
        sink: context.sinkId,
        subtask: context.subtask,
        logger: context.logger,
      };
    }
    if (context.ownership) {
      // Raised before the first write: nothing to recover first. The sink holds no name lock,
      // so a paused old owner's session that keeps a fence row locked is ended on a time-out.
      const fences = new SinkFences(this.bookkeepingSchema, context.sinkId, context.ownership);
      await fences.ensure(this.session);
      await fences.raise(
        this.session,
        fencedSubtaskIndexes(context),
        -1,
        async () => {},
        (pid) =>
          context.logger.warn("ended the session of an earlier owner of this shard that held the sink's fence", {
            sink: context.sinkId,
            subtask: context.subtask,
            pid,
          }),
      );
      this.fenced = { fences, subtask: context.subtask };
    }
  }

  protected write(batch: Batch<T>): void | Promise<void> {
    this.rows.add(batch);
    if (this.rows.size >= this.flushRows) return this.writeOuts.start(() => this.writeOut());
  }

  /** One statement per write-out (a COPY, or upserts of a few thousand rows each), committed at once. */
  private async writeOut(): Promise<void> {
    if (!this.session) throw new SinkNotOpenError("postgres session");
    const session = this.session;
    const rows = this.rows.take();
    await session.query("BEGIN");
    try {
      // Under the fence's share lock: a newer owner's raise waits until this write-out ends.
      await this.fenced?.fences.check(session, this.fenced.subtask);
      await writeRowsOrExplain(session, this.mapping, rows, this.setAside);
      await session.query("COMMIT");
    } catch (error) {
      // A refused row, or a privilege the role lacks, was explained after rolling the transaction back.
      if (!(error instanceof RecordWriteError || error instanceof ConfigurationError) && !session.broken)
        await session.query("ROLLBACK").catch(() => {});
      throw error;
    }
  }

  /** The barrier: every write-out before it committed. */
  protected async flush(_checkpointId: number): Promise<void> {
    await this.writeOuts.settle();
    if (this.rows.size > 0) await this.writeOut();
  }

  isTransient(error: unknown): boolean {
    return isTransientPostgresError(error);
  }

  async close(): Promise<void> {
    await this.writeOuts.settle().catch(() => {});
    await this.session?.close();
    this.session = undefined;
  }
}
