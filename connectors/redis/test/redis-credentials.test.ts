// Credentials never leak into errors, and a refused one is a setting to fix, not a fault to
// retry: a malformed URL is a ConfigurationError naming `connection` that carries no trace of
// its password (the whole cause chain, inspected), on a single server and a Cluster; a wrong
// password (WRONGPASS), or none where the server requires one (NOAUTH), fails at open with a
// ConfigurationError naming `connection`, not a transient error restarted for ever.

import { randomUUID } from "node:crypto";
import { inspect } from "node:util";
import { ConfigurationError } from "@exactly/core";
import { redisClusterNodes, redisUrl } from "@exactly/testkit/endpoints";
import { startScratchRedis } from "@exactly/testkit/redis/scratch-server";
import { sinkContext } from "@exactly/testkit/sink-context";
import { describe, expect, it } from "vitest";
import { type RedisConnectionOptions, RedisUpsertSink } from "../src/index.ts";
import { rejection, withRedis } from "./helpers.ts";

function upsertOn(connection: RedisConnectionOptions): RedisUpsertSink<number> {
  return new RedisUpsertSink<number>({
    connection,
    keyPrefix: "credentials:",
    key: (n) => `k${n}`,
    version: (n) => n,
    value: { shape: "json" },
    acceptLossyDurability: true,
  });
}

/** What opening a sink on `connection` fails with (the sink closed after). */
async function openFailure(connection: RedisConnectionOptions): Promise<unknown> {
  const sink = upsertOn(connection);
  const error = await rejection(sink.open(sinkContext("credentials")));
  await sink.close();
  return error;
}

function expectRefusedSecretFree(error: unknown, secret: string): void {
  expect(error).toBeInstanceOf(ConfigurationError);
  expect((error as ConfigurationError).setting).toBe("connection");
  expect(inspect(error, { depth: null })).not.toContain(secret);
  expect(String(error)).not.toContain(secret);
}

describe("a malformed URL", () => {
  it.each([
    ["a port that is not a number", (pw: string) => `redis://:${pw}@127.0.0.1:notaport`],
    ["a broken host", (pw: string) => `redis://user:${pw}@[bad/0`],
    ["a bad percent escape", (pw: string) => `redis://user:${pw}%zz@127.0.0.1:6379`],
  ])("with %s is refused naming connection, without its password", async (_what, url) => {
    const secret = `pw-${randomUUID()}`;
    expectRefusedSecretFree(await openFailure(url(secret)), secret);
    expectRefusedSecretFree(await openFailure({ clusterNodes: [url(secret)] }), secret);
  });
});

describe("refused credentials", () => {
  it("a wrong password is a ConfigurationError at open naming connection, without the password", async () => {
    const user = `exactly-test-${randomUUID().slice(0, 8)}`;
    const right = `right-${randomUUID()}`;
    const wrong = `wrong-${randomUUID()}`;
    const base = new URL(redisUrl());
    const urlWith = (password: string) => `redis://${user}:${password}@${base.host}`;
    await withRedis(redisUrl(), (client) => client.call("ACL", "SETUSER", user, "on", `>${right}`, "~*", "+@all"));
    try {
      // The right password opens.
      const sink = upsertOn(urlWith(right));
      await sink.open(sinkContext("credentials"));
      await sink.close();
      const error = await openFailure(urlWith(wrong));
      expectRefusedSecretFree(error, wrong);
      expect((error as Error).message).toContain("WRONGPASS");
    } finally {
      await withRedis(redisUrl(), (client) => client.call("ACL", "DELUSER", user));
    }
  });

  it("a wrong password on a Cluster is a ConfigurationError at open naming connection", {
    timeout: 30_000,
  }, async () => {
    const wrong = `wrong-${randomUUID()}`;
    const error = await openFailure({
      clusterNodes: redisClusterNodes(),
      clusterOptions: { redisOptions: { username: `nobody-${randomUUID().slice(0, 8)}`, password: wrong } },
    });
    expectRefusedSecretFree(error, wrong);
    expect((error as Error).message).toContain("WRONGPASS");
  });

  it("no password where the server requires one (NOAUTH) is a ConfigurationError at open", async () => {
    const server = await startScratchRedis([]);
    try {
      await withRedis(server.url, (client) => client.config("SET", "requirepass", `pw-${randomUUID()}`));
      const error = await openFailure(server.url);
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).setting).toBe("connection");
      expect((error as Error).message).toContain("NOAUTH");
    } finally {
      await server.stop();
    }
  });
});
