/**
 * Why a connection could not be made at open, naming host and port (never a URL, which may
 * hold a password). ioredis reports a refused port or an unknown host only as "Connection is
 * closed." (a single server; the cause comes as an 'error' event) or "None of startup nodes is
 * available" (a Cluster, whose node connections keep no cause at all: their ports are probed
 * here), which says nothing of what to fix.
 *
 * An unknown host (ENOTFOUND: the resolver answered that the name has no address) is a
 * `ConfigurationError` naming `connection`: a restart cannot make the name exist. A resolver
 * that did not answer (EAI_AGAIN), a refused port (ECONNREFUSED: the server is down or
 * restarting) and the other network errors are `TransientError`s, outages the job rides out
 * (docs/design.md §2, Restart strategy).
 */
import { connect } from "node:net";
import { ConfigurationError, TransientError } from "@exactly/core";

/** A place the client connects to, as a message may name it: a host and port, or a Unix socket's path. */
export interface Endpoint {
  readonly host: string;
  readonly port: number;
  readonly path?: string;
}

/** Codes that say the server could not be reached (as opposed to a reply it gave). */
const NETWORK_CODES = new Set([
  "ENOTFOUND",
  "EAI_AGAIN",
  "ECONNREFUSED",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ECONNRESET",
]);

interface NetworkError extends Error {
  readonly code: string;
  readonly hostname?: string;
}

/** The network error among what the client reported (the thrown error or an 'error' event), if any. */
export function networkErrorOf(error: unknown): NetworkError | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return error instanceof Error && typeof code === "string" && NETWORK_CODES.has(code)
    ? (error as NetworkError)
    : undefined;
}

const shown = (endpoint: Endpoint) => endpoint.path ?? `${endpoint.host}:${endpoint.port}`;

/** What a network error at `endpoint` means, as the error the sink fails with. */
export function unreachableError(endpoint: Endpoint, error: NetworkError): ConfigurationError | TransientError {
  // Only the errno error is kept as the cause: it holds code, address and port, never a password.
  const cause = { cause: error };
  switch (error.code) {
    case "ENOTFOUND":
      return new ConfigurationError(
        "connection",
        `names ${shown(endpoint)}, and the resolver has no address for ${endpoint.host} (ENOTFOUND); check the host in the URL or options`,
        cause,
      );
    case "EAI_AGAIN":
      return new TransientError(
        `redis: cannot reach ${shown(endpoint)} now: the resolver did not answer for ${endpoint.host} (EAI_AGAIN)`,
        cause,
      );
    case "ECONNREFUSED":
      return new TransientError(
        `redis: ${shown(endpoint)} refused the connection (ECONNREFUSED): no server listens there now`,
        cause,
      );
    default:
      return new TransientError(`redis: cannot connect to ${shown(endpoint)} (${error.code})`, cause);
  }
}

/** Each Cluster startup node's host and port, as ioredis reads them (a URL's credentials left out). */
export function endpointsOf(nodes: readonly unknown[]): Endpoint[] {
  const endpoints: Endpoint[] = [];
  for (const node of nodes) {
    if (typeof node === "number") endpoints.push({ host: "localhost", port: node });
    else if (typeof node === "string") {
      try {
        const url = new URL(node.includes("://") ? node : `redis://${node}`);
        endpoints.push({ host: url.hostname || "localhost", port: Number(url.port || 6379) });
      } catch {
        // Unparsable: ioredis refused it already (a malformed URL).
      }
    } else if (typeof node === "object" && node !== null) {
      const { host, port } = node as { host?: unknown; port?: unknown };
      endpoints.push({ host: typeof host === "string" ? host : "localhost", port: Number(port ?? 6379) });
    }
  }
  return endpoints;
}

/** The error a TCP connection to `endpoint` fails with, or undefined when it connects. */
function probe(endpoint: Endpoint, timeoutMs = 2000): Promise<NetworkError | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host: endpoint.host, port: endpoint.port });
    const done = (error: NetworkError | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(error);
    };
    const timer = setTimeout(
      () => done(Object.assign(new Error(`connect ETIMEDOUT ${shown(endpoint)}`), { code: "ETIMEDOUT" })),
      timeoutMs,
    );
    socket.once("connect", () => done(undefined));
    socket.once("error", (error) => done(networkErrorOf(error) ?? undefined));
  });
}

/**
 * Why none of a Cluster's startup nodes could be reached, when that is what failed: each node's
 * port probed. Undefined when one of them accepts a connection (the failure is something else).
 */
export async function unreachableCluster(
  nodes: readonly Endpoint[],
): Promise<ConfigurationError | TransientError | undefined> {
  const failures = await Promise.all(nodes.map((node) => probe(node)));
  if (nodes.length === 0 || failures.some((failure) => failure === undefined)) return undefined;
  const unknown = failures.findIndex((failure) => failure?.code === "ENOTFOUND");
  if (unknown >= 0) return unreachableError(nodes[unknown] as Endpoint, failures[unknown] as NetworkError);
  const why = nodes.map((node, i) =>
    unreachableError(node, failures[i] as NetworkError).message.replace(/^redis: /, ""),
  );
  return new TransientError(`redis: no startup node of the Cluster could be reached: ${why.join("; ")}`, {
    cause: failures[0],
  });
}
