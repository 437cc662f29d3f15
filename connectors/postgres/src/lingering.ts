import type { LingeringWork, LingeringWorkFinder, StateReferences } from "@exactly/core";
import { transactionsInState } from "@exactly/core/internal";
import { connectPostgres, type PostgresConnectionOptions } from "./pg/pg-connection.ts";
import type { PostgresConnection } from "./postgres-connection.ts";
import { parseGid, rollbackPrepared } from "./prepared-transactions.ts";
import { validateSinkName } from "./sql.ts";

export interface PostgresLingeringOptions {
  readonly connection: PostgresConnectionOptions;
  /** The sink's name in the database (PostgresTwoPhaseSink's `name`, default its name in the job). */
  readonly sinkName: string;
}

/**
 * The prepared transactions of one `PostgresTwoPhaseSink` in the connection's database, found
 * from outside the job. A prepared transaction outlives every session and restart until it is
 * committed or rolled back: it keeps its row locks and holds back vacuum's horizon. Only the
 * write-ahead sink has nothing of this kind (its transactions end with their session).
 */
export class PostgresLingeringTransactions implements LingeringWorkFinder {
  readonly description: string;
  private readonly options: PostgresLingeringOptions;
  private readonly sinkName: string;
  private connection: PostgresConnection | undefined;

  constructor(options: PostgresLingeringOptions) {
    this.sinkName = validateSinkName("sinkName", options.sinkName);
    this.options = options;
    this.description = `Postgres prepared transactions of sink ${this.sinkName}`;
  }

  private async connected(): Promise<PostgresConnection> {
    if (!this.connection || this.connection.broken) {
      this.connection = await connectPostgres(this.options.connection, "lingering");
    }
    return this.connection;
  }

  async list(): Promise<LingeringWork[]> {
    const connection = await this.connected();
    const { rows } = await connection.query(
      "SELECT gid, prepared, owner FROM pg_prepared_xacts WHERE database = current_database() AND starts_with(gid, $1) ORDER BY prepared",
      [`${this.sinkName}:`],
    );
    return rows.flatMap((row) => {
      const parsed = parseGid(this.sinkName, String(row.gid));
      if (!parsed) return [];
      const prepared = row.prepared instanceof Date ? row.prepared.getTime() : Date.parse(String(row.prepared));
      return [
        {
          id: parsed.gid,
          reference: parsed.gid,
          startedAt: Number.isNaN(prepared) ? undefined : prepared,
          detail: `subtask ${parsed.subtask}, checkpoint ${parsed.checkpointId}, owner ${String(row.owner)}`,
        },
      ];
    });
  }

  referencesIn(sinkState: unknown): StateReferences {
    const { pending, open } = transactionsInState(sinkState);
    const gids = (txns: unknown[]) =>
      txns.flatMap((t) => {
        const gid = (t as { gid?: unknown }).gid;
        return typeof gid === "string" && parseGid(this.sinkName, gid) ? [gid] : [];
      });
    return { pending: gids(pending), open: gids(open) };
  }

  async abort(work: LingeringWork): Promise<void> {
    await rollbackPrepared(await this.connected(), work.id);
  }

  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    await connection?.close();
  }
}
