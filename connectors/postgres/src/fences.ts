/**
 * The Postgres sinks' fences in a sharded job (I9, docs/design.md §2 Shards and §5): one row
 * `(sink, subtask, epoch)` per global subtask index in `exactly_fences`, beside the marker
 * and progress tables. A sink raises the rows of the indexes it restores or cleans up to its
 * epoch when it opens, and every transaction that can become visible or linger (the one the
 * two-phase sink prepares, the write-ahead sink's commit) reads its row `FOR SHARE` first and
 * refuses to go on under a newer epoch.
 *
 * The share lock closes the race of an old owner that read the row just before its successor
 * raised it: the raise (an UPDATE) waits until that transaction ends. A transaction the old
 * owner prepared keeps the lock, so the successor raises with a short `lock_timeout`, rolls
 * back the lingering prepared transactions again when it times out, and tries again: it
 * never waits for a transaction nobody will end. One the old owner still has open (paused
 * between its check and its PREPARE) ends with its session: after a rescale the successor
 * holds no name lock of that index, so on a time-out it also ends the sessions named as this
 * sink's for the other indexes it fences (only old owners hold those names: an index above
 * the new parallelism belongs to no live subtask). Without ownership (a job that is not
 * sharded) nothing here runs: no table, no statement.
 *
 * Fences outlive the lease they came from: a job run again from a fresh checkpoint location
 * keeps its sink names. Its epochs begin at its first layout's clock (core's shard-layout.ts),
 * above every epoch an earlier run left, so it raises those fences like any newer owner.
 */
import { ShardFencedError, type ShardOwnership, TransientError } from "@exactly/core";
import { ensureOwnTable, FENCE_TABLE, OWN_TABLES } from "./bookkeeping.ts";
import { type PostgresConnection, sqlstateOf } from "./postgres-connection.ts";
import { qualifiedName } from "./sql.ts";
import { endEarlierOwners } from "./startup-checks.ts";

/** How long one raise waits for a row lock before the lingering work is rolled back again. */
const RAISE_LOCK_TIMEOUT_MS = 1000;
/** Raises tried before giving up (transient: the attempt restarts and recovers again). */
const RAISE_ATTEMPTS = 30;

export class SinkFences {
  readonly table: string;
  private readonly schema: string;
  private readonly sink: string;
  readonly epoch: number;

  constructor(schema: string, sink: string, ownership: ShardOwnership) {
    this.schema = schema;
    this.table = qualifiedName(schema, FENCE_TABLE);
    this.sink = sink;
    this.epoch = ownership.epoch;
  }

  ensure(connection: PostgresConnection): Promise<void> {
    return ensureOwnTable(connection, OWN_TABLES.fences, this.schema, "bookkeepingSchema");
  }

  /** Outside a transaction, before any cleanup: refuses if a newer owner raised any of these fences already. */
  async assertCurrent(connection: PostgresConnection, indexes: readonly number[]): Promise<void> {
    await this.assertNewest(connection, indexes);
  }

  /** Before ending another session: refuses if any of these fences is above this epoch, whoever this owner is. */
  async assertNewest(connection: PostgresConnection, indexes: readonly number[]): Promise<void> {
    const { rows } = await connection.query(
      `SELECT subtask, epoch FROM ${this.table} WHERE sink = $1 AND subtask = ANY($2::int[]) AND epoch > $3`,
      [this.sink, indexes, this.epoch],
    );
    if (rows.length > 0) throw this.fenced(rows);
  }

  /**
   * Inside the transaction that writes for `subtask`, before it is prepared or committed: holds
   * the fence row's share lock until the transaction ends, and refuses a newer epoch.
   */
  async check(connection: PostgresConnection, subtask: number): Promise<void> {
    const { rows } = await connection.query(
      `SELECT subtask, epoch FROM ${this.table} WHERE sink = $1 AND subtask = $2 FOR SHARE`,
      [this.sink, subtask],
    );
    if (rows.some((r) => Number(r.epoch) > this.epoch)) throw this.fenced(rows);
  }

  /**
   * Raises the fences of `indexes` to this epoch, in one transaction. A row lock held by a
   * prepared transaction (an old owner's, prepared after `rollBackLingering` looked) or by an
   * old owner's open one makes the raise time out: `rollBackLingering` runs again, the old
   * owners' sessions of the indexes other than `own` (whose name lock the caller holds; none
   * for a sink without one) are ended (`ended` hears of each), and the raise is tried again.
   */
  async raise(
    connection: PostgresConnection,
    indexes: readonly number[],
    own: number,
    rollBackLingering: () => Promise<void>,
    ended: (pid: number) => void,
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.raiseOnce(connection, indexes);
        return;
      } catch (error) {
        if (sqlstateOf(error) !== "55P03") throw error;
        if (attempt >= RAISE_ATTEMPTS) {
          throw new TransientError(
            `the fences of sink ${this.sink} (subtasks ${indexes.join(", ")}) stayed locked by other transactions`,
            { cause: error },
          );
        }
        await rollBackLingering();
        // Never an owner newer than this one: its sessions are left alone, and this one stops.
        await this.assertNewest(connection, indexes);
        for (const index of indexes) if (index !== own) await endEarlierOwners(connection, this.sink, index, ended);
      }
    }
  }

  private async raiseOnce(connection: PostgresConnection, indexes: readonly number[]): Promise<void> {
    await connection.query("BEGIN");
    try {
      await connection.query(`SET LOCAL lock_timeout = ${RAISE_LOCK_TIMEOUT_MS}`);
      await connection.query(
        `INSERT INTO ${this.table} (sink, subtask, epoch) SELECT $1, i, $3 FROM unnest($2::int[]) AS i ON CONFLICT (sink, subtask) DO NOTHING`,
        [this.sink, indexes, this.epoch],
      );
      // Only rows below this epoch are locked: an equal one (a restart at the same epoch) is left alone.
      await connection.query(
        `UPDATE ${this.table} SET epoch = $3, raised_at = now() WHERE sink = $1 AND subtask = ANY($2::int[]) AND epoch < $3`,
        [this.sink, indexes, this.epoch],
      );
      const { rows } = await connection.query(
        `SELECT subtask, epoch FROM ${this.table} WHERE sink = $1 AND subtask = ANY($2::int[]) AND epoch > $3`,
        [this.sink, indexes, this.epoch],
      );
      if (rows.length > 0) throw this.fenced(rows);
      await connection.query("COMMIT");
    } catch (error) {
      if (!connection.broken) await connection.query("ROLLBACK").catch(() => {});
      throw error;
    }
  }

  private fenced(rows: ReadonlyArray<Record<string, unknown>>): ShardFencedError {
    const newer = rows.map((r) => `subtask ${r.subtask} at epoch ${r.epoch}`).join(", ");
    return new ShardFencedError(
      this.epoch,
      `sink ${this.sink}: a newer owner raised its fences in ${this.table} (${newer}); nothing this owner writes may become visible (if the shard's lease and checkpoints were deleted, so that epochs began again, delete this sink's rows there)`,
    );
  }
}
