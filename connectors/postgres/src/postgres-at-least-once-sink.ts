import {
  type Batch,
  DeliveryGuarantee,
  type Sink,
  type SinkCapabilities,
  type SinkContext,
  SinkNotOpenError,
} from "@exactly/core";
import type { PostgresConnection } from "./connection.ts";
import { pgConnect } from "./pg/pg-connection.ts";
import { type PostgresSinkOptions, resolvePostgresOptions } from "./postgres-options.ts";
import { RowBuffer } from "./row-buffer.ts";
import { explainRejection, isRejection, writeRows } from "./row-writer.ts";
import { checkTable } from "./startup-checks.ts";
import type { CompiledMapping } from "./table-mapping.ts";

export type PostgresAtLeastOnceSinkOptions<T> = Omit<
  PostgresSinkOptions<T>,
  "name" | "bookkeepingSchema" | "nameLockWaitMs"
>;

/**
 * The at-least-once Postgres sink: rows are written on the same bulk paths, each write-out
 * committed at once, and the barrier waits until everything before it is committed. A crash
 * replays what came after the last checkpoint, so appends may show duplicates (upserts
 * absorb them). No prepared transactions, no bookkeeping tables.
 */
export class PostgresAtLeastOnceSink<T> implements Sink<T> {
  readonly guarantee = DeliveryGuarantee.AT_LEAST_ONCE;
  readonly capabilities: SinkCapabilities = { rescale: true, abortsLingering: false };
  private readonly options: PostgresAtLeastOnceSinkOptions<T>;
  private readonly mapping: CompiledMapping<T>;
  private readonly flushRows: number;
  private readonly rows: RowBuffer<T>;
  private session: PostgresConnection | undefined;

  constructor(options: PostgresAtLeastOnceSinkOptions<T>) {
    this.options = options;
    const resolved = resolvePostgresOptions(options);
    this.mapping = resolved.mapping;
    this.flushRows = resolved.flushRows;
    this.rows = new RowBuffer(this.mapping);
  }

  async open(context: SinkContext): Promise<void> {
    this.session = await pgConnect(this.options.connection)(`${context.sinkId}:${context.subtask}`);
    await checkTable(this.session, this.mapping);
  }

  writeBatch(batch: Batch<T>): void | Promise<void> {
    this.rows.add(batch);
    if (this.rows.size >= this.flushRows) return this.writeOut();
  }

  /** One statement per write-out (a COPY, or upserts of a few thousand rows each), committed at once. */
  private async writeOut(): Promise<void> {
    if (!this.session) throw new SinkNotOpenError("postgres session");
    const session = this.session;
    const rows = this.rows.take();
    await session.query("BEGIN");
    try {
      await writeRows(session, this.mapping, rows);
      await session.query("COMMIT");
    } catch (error) {
      if (isRejection(error)) throw await explainRejection(session, this.mapping, rows, error);
      if (!session.broken) await session.query("ROLLBACK").catch(() => {});
      throw error;
    }
  }

  async snapshotState(_checkpointId: number): Promise<Record<string, never>> {
    if (this.rows.size > 0) await this.writeOut();
    return {};
  }

  async notifyCheckpointComplete(_checkpointId: number): Promise<void> {
    // Everything was committed at the barrier.
  }

  async notifyCheckpointAborted(_checkpointId: number): Promise<void> {}

  async close(): Promise<void> {
    await this.session?.close();
    this.session = undefined;
  }
}
