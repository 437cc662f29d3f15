/**
 * Before `exactly lingering` lists anything, and before the demo prepares a server it writes
 * to, the command checks that the server accepts a connection: a server that is down or a
 * mistyped address fails within seconds, naming the flag or variable to fix, instead of after
 * the client's own retries with the client's message.
 */
import { connect } from "node:net";
import { ConfigurationError } from "@exactly/core";

/** How long the server has to accept a connection. */
const CONNECT_TIMEOUT_MS = 3000;

export interface ServerAddress {
  readonly host: string;
  readonly port: number;
}

/** Where a command reaches a server, and what the user sets to change it. */
export interface ServerSetting {
  /** The flag and variable that give the address, as the message names them: "--brokers (or $EXACTLY_KAFKA_BROKERS)". */
  readonly setting: string;
  /** The server, as the message names it: "the Kafka broker". */
  readonly what: string;
  readonly address: ServerAddress;
}

/** Resolves when `address` accepts a TCP connection; refuses with the socket's error otherwise. */
function connectOnce(address: ServerAddress): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address.host, port: address.port });
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => {
      socket.destroy();
      reject(new Error(`no answer within ${CONNECT_TIMEOUT_MS / 1000} s`));
    });
    socket.once("connect", () => {
      socket.end();
      resolve();
    });
    socket.once("error", (error: NodeJS.ErrnoException) => {
      socket.destroy();
      reject(new Error(error.code === "ECONNREFUSED" ? "connection refused" : (error.code ?? error.message)));
    });
  });
}

/** Throws a ConfigurationError naming `server.setting` when the server does not accept a connection. */
export async function checkServer(server: ServerSetting): Promise<void> {
  const { host, port } = server.address;
  try {
    await connectOnce(server.address);
  } catch (error) {
    throw new ConfigurationError(
      server.setting,
      `cannot reach ${server.what} at ${host}:${port} (${(error as Error).message}): is it running, and is this its address?`,
      { cause: error },
    );
  }
}

/** Passes when one of the addresses accepts a connection (any bootstrap broker will do); unparsed ones are left to the client. */
export async function checkAnyServer(
  setting: string,
  what: string,
  addresses: ReadonlyArray<ServerAddress | undefined>,
): Promise<void> {
  const known = addresses.filter((a): a is ServerAddress => a !== undefined);
  if (known.length === 0) return;
  try {
    await Promise.any(known.map((address) => checkServer({ setting, what, address })));
  } catch (error) {
    throw (error as AggregateError).errors[0];
  }
}

/** The server at `address`, or none when the address could not be read (then the client reports it). */
export function serverAt(setting: string, what: string, address: ServerAddress | undefined): ServerSetting | undefined {
  return address === undefined ? undefined : { setting, what, address };
}

/** `host:port` of a broker list's entry, or of a URL (postgres://, http(s)://), with the scheme's port by default. */
export function addressOf(value: string, defaultPort: number): ServerAddress | undefined {
  try {
    const url = new URL(value.includes("://") ? value : `tcp://${value}`);
    if (!url.hostname) return undefined;
    const port = url.port
      ? Number(url.port)
      : url.protocol === "https:"
        ? 443
        : url.protocol === "http:"
          ? 80
          : defaultPort;
    return { host: url.hostname.replace(/^\[|\]$/g, ""), port };
  } catch {
    // Not a URL (a libpq key=value string, say): the client reports what it makes of it.
    return undefined;
  }
}
