// A server the sink cannot reach at open says why, naming host and port and never a password:
// a port nothing listens on (ECONNREFUSED) is a TransientError (a server down for a while is an
// outage, and the job rides it out), and a host name the resolver does not know (ENOTFOUND) is
// a ConfigurationError naming `connection` (a restart cannot make the name exist), on a single
// server and on a Cluster alike.

import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { inspect } from "node:util";
import { ConfigurationError, TransientError } from "@exactly/core";
import { sinkContext } from "@exactly/testkit/sink-context";
import { describe, expect, it } from "vitest";
import { type RedisConnectionOptions, RedisUpsertSink, RedisWriteAheadSink } from "../src/index.ts";
import { rejection } from "./helpers.ts";

/** A loopback port nothing listens on: one the system just gave out and took back. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** `.invalid` is reserved (RFC 2606): no resolver knows a name under it. */
const UNKNOWN_HOST = "nonexistent.invalid";

const sinks = {
  upsert: (connection: RedisConnectionOptions) =>
    new RedisUpsertSink<number>({
      connection,
      keyPrefix: "unreachable:",
      key: (n) => `k${n}`,
      version: (n) => n,
      value: { shape: "json" },
    }),
  "write-ahead": (connection: RedisConnectionOptions) =>
    new RedisWriteAheadSink<number>({
      connection,
      keyPrefix: "{unreachable}:",
      operations: (n) => ({ op: "incrBy", key: "n", by: n }),
    }),
};

/** What opening a sink on `connection` fails with (the sink closed after). */
async function openFailure(kind: keyof typeof sinks, connection: RedisConnectionOptions): Promise<unknown> {
  const sink = sinks[kind](connection);
  const error = await rejection(sink.open(sinkContext("unreachable")));
  await sink.close();
  return error;
}

function expectSecretFree(error: unknown, secret: string): void {
  expect(inspect(error, { depth: null })).not.toContain(secret);
  expect(String(error)).not.toContain(secret);
}

describe.each(Object.keys(sinks) as (keyof typeof sinks)[])("%s sink", (kind) => {
  it("a port nothing listens on is a TransientError naming host and port", async () => {
    const port = await closedPort();
    const secret = `pw-${randomUUID()}`;
    const error = await openFailure(kind, `redis://user:${secret}@127.0.0.1:${port}`);
    expect(error).toBeInstanceOf(TransientError);
    expect((error as Error).message).toContain(`127.0.0.1:${port}`);
    expect((error as Error).message).toContain("ECONNREFUSED");
    expectSecretFree(error, secret);
  });

  it("an unknown host is a ConfigurationError naming connection, the host and the port", async () => {
    const secret = `pw-${randomUUID()}`;
    const error = await openFailure(kind, `redis://user:${secret}@${UNKNOWN_HOST}:6390`);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("connection");
    expect((error as Error).message).toContain(`${UNKNOWN_HOST}:6390`);
    expect((error as Error).message).toContain("ENOTFOUND");
    expectSecretFree(error, secret);
  });

  it("ioredis options ({ host, port }) are named the same way", async () => {
    const port = await closedPort();
    const refused = await openFailure(kind, { host: "127.0.0.1", port, password: "pw-options" });
    expect(refused).toBeInstanceOf(TransientError);
    expect((refused as Error).message).toContain(`127.0.0.1:${port}`);
    const unknown = await openFailure(kind, { host: UNKNOWN_HOST, port: 6391, password: "pw-options" });
    expect(unknown).toBeInstanceOf(ConfigurationError);
    expect((unknown as Error).message).toContain(`${UNKNOWN_HOST}:6391`);
    expectSecretFree(refused, "pw-options");
    expectSecretFree(unknown, "pw-options");
  });
});

describe("a Cluster", () => {
  it("whose startup nodes all refuse connections is a TransientError naming each node", async () => {
    const [first, second] = [await closedPort(), await closedPort()];
    const secret = `pw-${randomUUID()}`;
    const error = await openFailure("upsert", {
      clusterNodes: [
        { host: "127.0.0.1", port: first },
        { host: "127.0.0.1", port: second },
      ],
      clusterOptions: { redisOptions: { password: secret } },
    });
    expect(error).toBeInstanceOf(TransientError);
    expect((error as Error).message).toContain(`127.0.0.1:${first}`);
    expect((error as Error).message).toContain(`127.0.0.1:${second}`);
    expect((error as Error).message).toContain("ECONNREFUSED");
    expectSecretFree(error, secret);
  });

  it("with a startup node of an unknown host is a ConfigurationError naming connection, host and port", async () => {
    const secret = `pw-${randomUUID()}`;
    for (const node of [{ host: UNKNOWN_HOST, port: 7001 }, `redis://user:${secret}@${UNKNOWN_HOST}:7001`]) {
      const error = await openFailure("upsert", { clusterNodes: [node] });
      expect(error, JSON.stringify(node)).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).setting).toBe("connection");
      expect((error as Error).message).toContain(`${UNKNOWN_HOST}:7001`);
      expect((error as Error).message).toContain("ENOTFOUND");
      expectSecretFree(error, secret);
    }
  });
});
