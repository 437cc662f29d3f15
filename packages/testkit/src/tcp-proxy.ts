// A TCP proxy between a job and a server that the test controls: it adds latency, cuts every
// connection, or cuts one connection right after it forwarded a request that matches (a
// commit in flight: the server gets it, the client never hears the answer, so the outcome
// must be settled from the server). Small on purpose: node:net, no dependency.

import { connect, createServer, type Server, type Socket } from "node:net";

export interface TcpProxy {
  /** The port the proxy listens on (127.0.0.1). */
  readonly port: number;
  /** Delay of every chunk, each way, from now on. */
  setLatency(ms: number): void;
  /** Ends every open connection at once (both sides), as a network cut does. */
  cutAll(): void;
  /**
   * While down, every open connection is cut and every new one is closed as it arrives, as if
   * the server were unreachable; up again, connections pass as before.
   */
  setDown(down: boolean): void;
  /**
   * The next client → server chunk that contains `pattern` (text protocols), or that
   * `pattern` accepts (binary ones), is forwarded, then its connection is cut before the
   * answer can come back. Resolves when that happened.
   */
  cutAfterRequest(pattern: string | ((chunk: Buffer) => boolean)): Promise<void>;
  /** Connections cut so far. */
  readonly cuts: number;
  close(): Promise<void>;
}

export async function startTcpProxy(
  target: { host: string; port: number },
  /** Where the proxy listens (127.0.0.1); default a free port. A fixed port another proxy holds is waited for. */
  listenPort = 0,
): Promise<TcpProxy> {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let latency = 0;
  let cuts = 0;
  let armed: { matches: (chunk: Buffer) => boolean; done: () => void } | undefined;
  let down = false;

  /** Ends both sides; counted as a cut unless one side had closed by itself. */
  const cut = (pair: { client: Socket; upstream: Socket }, counted = true) => {
    if (!pairs.delete(pair)) return;
    if (counted) cuts++;
    pair.client.destroy();
    pair.upstream.destroy();
  };

  /** Writes in order, each chunk `latency` ms after it arrived. */
  const delayed = (to: Socket) => {
    let last = Promise.resolve();
    return (chunk: Buffer, after?: () => void) => {
      const due = Date.now() + latency;
      last = last.then(async () => {
        const wait = due - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        if (!to.destroyed) to.write(chunk);
        after?.();
      });
    };
  };

  const server: Server = createServer((client) => {
    if (down) {
      cuts++;
      client.destroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    const pair = { client, upstream };
    pairs.add(pair);
    const toServer = delayed(upstream);
    const toClient = delayed(client);
    /** Set once the armed request went through: the server's answer is never passed on. */
    let answerLost = false;
    client.on("data", (chunk: Buffer) => {
      const rule = armed;
      if (rule?.matches(chunk)) {
        armed = undefined;
        answerLost = true;
        // Forwarded whole; the connection dies once the server has had a moment to act on it.
        toServer(chunk, () => {
          setTimeout(() => {
            cut(pair);
            rule.done();
          }, 20);
        });
        return;
      }
      toServer(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (!answerLost) toClient(chunk);
    });
    const end = () => cut(pair, false);
    for (const socket of [client, upstream]) {
      socket.on("error", end);
      socket.on("close", end);
    }
  });
  // A fixed port is one another test's proxy may hold (the Kafka broker's proxied listener
  // advertises one address): wait until it is free, so such tests take turns.
  for (let waited = 0; ; waited += 200) {
    const listening = await new Promise<boolean>((resolve, reject) => {
      const refused = (error: NodeJS.ErrnoException) => {
        if (error.code === "EADDRINUSE" && listenPort !== 0 && waited < 300_000) resolve(false);
        else reject(error);
      };
      server.once("error", refused);
      server.listen(listenPort, "127.0.0.1", () => {
        server.off("error", refused);
        resolve(true);
      });
    });
    if (listening) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the proxy has no TCP address");

  return {
    port: address.port,
    setLatency(ms) {
      latency = ms;
    },
    cutAll() {
      for (const pair of [...pairs]) cut(pair);
    },
    setDown(value) {
      down = value;
      if (down) for (const pair of [...pairs]) cut(pair);
    },
    cutAfterRequest(pattern) {
      return new Promise<void>((resolve) => {
        const text = typeof pattern === "string" ? Buffer.from(pattern) : undefined;
        armed = {
          matches: text ? (chunk) => chunk.includes(text) : (pattern as (chunk: Buffer) => boolean),
          done: resolve,
        };
      });
    },
    get cuts() {
      return cuts;
    },
    close() {
      for (const pair of [...pairs]) cut(pair);
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
