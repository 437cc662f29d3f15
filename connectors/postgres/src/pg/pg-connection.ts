/**
 * The `PostgresConnection` port on `pg` (one `pg.Client` per connection, or one borrowed from
 * a caller's pool or client) and COPY on `pg-copy-streams`. The only module of the connector
 * that imports either; both are pinned exactly. It turns the client's errors into the port's two shapes: `ServerError` with the
 * SQLSTATE, or `TransientError` for a connection that is gone.
 */
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { ConfigurationError, TransientError } from "@exactly/core";
import pg from "pg";
import copyStreams from "pg-copy-streams";
import {
  type PostgresConnect,
  type PostgresConnection,
  type QueryResult,
  ServerError,
} from "../postgres-connection.ts";

/** A connection string, or `pg`'s client settings (host, port, user, password, database, ssl …). */
export type PostgresConnectionOptions = string | pg.ClientConfig;

function translate(error: unknown, connection?: PgConnection): Error {
  if (error instanceof pg.DatabaseError && typeof error.code === "string") {
    const fields = {
      sqlstate: error.code,
      ...(error.column ? { column: error.column } : {}),
      ...(error.constraint ? { constraint: error.constraint } : {}),
      ...(error.detail ? { detail: error.detail } : {}),
      ...(error.where ? { where: error.where } : {}),
    };
    // The server ends the session after these (admin shutdown, crash shutdown …).
    if (error.code.startsWith("08") || error.code.startsWith("57P")) connection?.markBroken();
    return new ServerError(error.message, fields, { cause: error });
  }
  // Anything else from the client is about the connection: refused, reset, terminated, timed out.
  connection?.markBroken();
  const message = error instanceof Error ? error.message : String(error);
  return new TransientError(`postgres connection lost: ${message}`, { cause: error });
}

class PgConnection implements PostgresConnection {
  private readonly client: pg.ClientBase;
  /** For a client the caller owns: gives it back instead of ending it. */
  private readonly giveBack: ((lost: boolean) => void) | undefined;
  private lost = false;
  private readonly onLost = () => this.markBroken();

  constructor(client: pg.ClientBase, giveBack?: (lost: boolean) => void) {
    this.client = client;
    this.giveBack = giveBack;
    // Without a listener an idle connection's error would crash the process.
    client.on("error", this.onLost);
    client.on("end", this.onLost);
  }

  get broken(): boolean {
    return this.lost;
  }

  markBroken(): void {
    this.lost = true;
  }

  async query(statement: string, values?: readonly unknown[]): Promise<QueryResult> {
    if (this.lost) throw new TransientError("postgres connection lost earlier; reconnect");
    try {
      const result = await this.client.query(statement, values as unknown[] | undefined);
      return { rows: result.rows, rowCount: result.rowCount ?? 0 };
    } catch (error) {
      throw translate(error, this);
    }
  }

  async copyFrom(statement: string, pieces: readonly string[]): Promise<number> {
    if (this.lost) throw new TransientError("postgres connection lost earlier; reconnect");
    const stream = this.client.query(copyStreams.from(statement));
    try {
      await pipeline(Readable.from(pieces), stream);
    } catch (error) {
      throw translate(error, this);
    }
    return stream.rowCount;
  }

  async copyBytes(statement: string, chunks: AsyncIterable<Uint8Array>): Promise<number> {
    if (this.lost) throw new TransientError("postgres connection lost earlier; reconnect");
    const stream = this.client.query(copyStreams.from(statement));
    // The source's own failure (a log it cannot read) is no lost connection: thrown as it is.
    // The server's refusal reaches the source too (the stream throws it into the iterator
    // when it is destroyed), and is the server's, not the source's.
    let sourceFailed = false;
    async function* source(): AsyncGenerator<Uint8Array> {
      try {
        yield* chunks;
      } catch (error) {
        sourceFailed = true;
        throw error;
      }
    }
    try {
      await pipeline(Readable.from(source(), { objectMode: false }), stream);
    } catch (error) {
      if (sourceFailed && !(error instanceof pg.DatabaseError)) throw error;
      throw translate(error, this);
    }
    return stream.rowCount;
  }

  async close(): Promise<void> {
    const lost = this.lost;
    this.lost = true;
    if (this.giveBack) {
      // The owner's client goes on without our listeners; its own errors are the owner's again.
      this.client.off("error", this.onLost);
      this.client.off("end", this.onLost);
      this.giveBack(lost);
      return;
    }
    // Without giveBack the client is one pgConnect made: a pg.Client this connection ends.
    await (this.client as pg.Client).end().catch(() => {});
  }
}

/**
 * SQLSTATEs of a login the server refuses: a wrong password (28P01), a role that does not
 * exist or may not log in, or no pg_hba.conf entry (28000), a database that does not exist
 * (3D000). A restart would meet the same refusal: the connection setting is wrong.
 */
const LOGIN_REFUSED = new Set(["28P01", "28000", "3D000"]);

/**
 * The error of a failed connect: a refused login as a ConfigurationError naming the
 * `connection` setting, a server that cannot be reached as a TransientError saying so. The server's message names the role or database, never the password.
 */
function connectError(error: unknown, connection: PgConnection): Error {
  const translated = translate(error, connection);
  // It never connected: "connection lost" would send a reader looking for a dropped session.
  if (translated instanceof TransientError) {
    const message = error instanceof Error ? error.message : String(error);
    return new TransientError(`postgres: cannot connect: ${message}`, { cause: error });
  }
  if (translated instanceof ServerError && LOGIN_REFUSED.has(translated.sqlstate))
    return new ConfigurationError(
      "connection",
      `the server refused the login: ${translated.message} (SQLSTATE ${translated.sqlstate})`,
      { cause: translated },
    );
  return translated;
}

/** The client for `config`; a connection string it cannot read is refused without echoing it (it may hold a password). */
function newClient(config: pg.ClientConfig): pg.Client {
  try {
    return new pg.Client(config);
  } catch (error) {
    // The parser's error keeps the whole string (Node's URL error in its `input`): not passed on.
    const message = error instanceof Error ? (error.message.split("\n")[0] as string) : "";
    const reason = message && !message.includes("://") && !message.includes("@") ? message : "unreadable";
    throw new ConfigurationError("connection", `is not a valid Postgres connection string (${reason})`);
  }
}

/**
 * Opens connections to one server. Each gets `application_name` `exactly:<purpose>` (seen
 * in pg_stat_activity) and TCP keepalives, so a dead peer is noticed.
 */
export function pgConnect(options: PostgresConnectionOptions): PostgresConnect {
  return async (purpose) => {
    const base: pg.ClientConfig = typeof options === "string" ? { connectionString: options } : options;
    const client = newClient({
      keepAlive: true,
      ...base,
      application_name: `exactly:${purpose}`.slice(0, 63),
    });
    const connection = new PgConnection(client);
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => {});
      throw connectError(error, connection);
    }
    return connection;
  };
}

/** A `pg.Pool`, or a connected `pg.Client`, of the caller's: the connector borrows it and never ends it. */
export type PgClientSource = pg.Pool | pg.Client;

/** A client source rather than settings: it can run queries. */
export function isPgClientSource(options: PostgresConnectionOptions | PgClientSource): options is PgClientSource {
  return typeof (options as { query?: unknown }).query === "function";
}

/**
 * Connections on the caller's pool or client: each takes a client from the pool (released
 * on close, destroyed if it was lost) or is the caller's client itself (left open on close).
 */
export function pgBorrow(source: PgClientSource): PostgresConnect {
  return async () => {
    if (!("idleCount" in source)) return new PgConnection(source, () => {});
    let client: pg.PoolClient;
    try {
      client = await source.connect();
    } catch (error) {
      throw translate(error);
    }
    return new PgConnection(client, (lost) =>
      client.release(lost ? new Error("postgres connection lost; not returned to the pool") : undefined),
    );
  };
}

/**
 * One connection on the connector's port, for tools (the demo, cleanup of leftovers): bound
 * values, COPY, errors as `ServerError` with the SQLSTATE. Close it when done.
 */
export function connectPostgres(options: PostgresConnectionOptions, purpose = "tool"): Promise<PostgresConnection> {
  return pgConnect(options)(purpose);
}
