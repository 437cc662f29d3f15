/**
 * What the Redis tests share: a client on the test server or Cluster, fresh key prefixes, what
 * a reader sees.
 */
import { uniqueName } from "@exactly/testkit/ids";
import { Cluster, Redis } from "ioredis";
import { type RedisClusterConnection, versionKeyOf } from "../src/index.ts";

/** A single server's URL, or a Cluster, as the sinks take them. */
export type RedisTarget = string | RedisClusterConnection;

export async function withRedis<T>(target: RedisTarget, use: (client: Redis | Cluster) => Promise<T>): Promise<T> {
  const client =
    typeof target === "string"
      ? new Redis(target, { lazyConnect: true })
      : new Cluster([...target.clusterNodes], { lazyConnect: true });
  client.on("error", () => {});
  await client.connect();
  try {
    return await use(client);
  } finally {
    client.disconnect();
  }
}

/** A Cluster's masters, or the one server: where a SCAN must go to see every key. */
function servers(client: Redis | Cluster): Redis[] {
  return client instanceof Cluster ? client.nodes("master") : [client];
}

export function freshPrefix(label: string): string {
  return `${uniqueName(`test:${label}`, ":")}:`;
}

/** Every key under `prefix` (SCAN, not KEYS), version keys included. */
export async function keysUnder(client: Redis | Cluster, prefix: string): Promise<string[]> {
  const found: string[] = [];
  // A version key of a key without a hash tag starts with "{", before the prefix.
  for (const server of servers(client)) {
    for (const pattern of [`${prefix}*`, `{${prefix}*`]) {
      let cursor = "0";
      do {
        const [next, keys] = await server.scan(cursor, "MATCH", pattern, "COUNT", 1000);
        found.push(...keys);
        cursor = next;
      } while (cursor !== "0");
    }
  }
  return found;
}

export async function deleteUnder(target: RedisTarget, prefix: string): Promise<void> {
  await withRedis(target, async (client) => {
    const keys = await keysUnder(client, prefix);
    // One key per DEL: a Cluster refuses a DEL of keys in several slots.
    for (let i = 0; i < keys.length; i += 500) await Promise.all(keys.slice(i, i + 500).map((key) => client.del(key)));
  });
}

/** A JSON-shaped key's record and its stored version, as a reader sees them. */
export async function readJson<T>(
  client: Redis | Cluster,
  key: string,
): Promise<{ value: T; version: number } | undefined> {
  const [value, version] = await client.mget(key, versionKeyOf(key));
  if (value === null || value === undefined) return undefined;
  return { value: JSON.parse(value) as T, version: Number(version) };
}

/** What a promise rejected with, or undefined if it resolved. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e: unknown) => e,
  );
}
