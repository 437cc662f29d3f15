/** What the Redis tests share: a client on the test server, fresh key prefixes, what a reader sees. */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { versionKeyOf } from "../src/index.ts";

export async function withRedis<T>(url: string, use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(url, { lazyConnect: true });
  client.on("error", () => {});
  await client.connect();
  try {
    return await use(client);
  } finally {
    client.disconnect();
  }
}

export function freshPrefix(label: string): string {
  return `test:${label}:${randomUUID().slice(0, 8)}:`;
}

/** Every key under `prefix` (SCAN, not KEYS), version keys included. */
export async function keysUnder(client: Redis, prefix: string): Promise<string[]> {
  const found: string[] = [];
  // A version key of a key without a hash tag starts with "{", before the prefix.
  for (const pattern of [`${prefix}*`, `{${prefix}*`]) {
    let cursor = "0";
    do {
      const [next, keys] = await client.scan(cursor, "MATCH", pattern, "COUNT", 1000);
      found.push(...keys);
      cursor = next;
    } while (cursor !== "0");
  }
  return found;
}

export async function deleteUnder(url: string, prefix: string): Promise<void> {
  await withRedis(url, async (client) => {
    const keys = await keysUnder(client, prefix);
    for (let i = 0; i < keys.length; i += 500) await client.del(...keys.slice(i, i + 500));
  });
}

/** A JSON-shaped key's record and its stored version, as a reader sees them. */
export async function readJson<T>(client: Redis, key: string): Promise<{ value: T; version: number } | undefined> {
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
