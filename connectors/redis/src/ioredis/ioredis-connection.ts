/**
 * The `RedisConnection` port on ioredis (the only module that imports it; ioredis is pinned
 * exactly, as its script handling is relied on). Each script is a custom command
 * (`defineCommand`): ioredis sends it by EVALSHA, and after a NOSCRIPT sends the script
 * itself, which loads it again.
 */
import { TransientError } from "@exactly/core";
import { Redis, type RedisOptions } from "ioredis";
import type { RedisConnect, RedisConnection, ScriptCall } from "../connection.ts";
import { SCRIPTS, type ScriptName } from "../lua/scripts.ts";

/** A `redis://` URL, or ioredis options. Credentials are never logged. */
export type RedisConnectionOptions = string | RedisOptions;

/** Connection-level failures: the command may or may not have reached the server. */
const TRANSIENT_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND"]);

function translate(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const code = (error as { code?: string }).code;
  const message = error.message;
  if (
    (code !== undefined && TRANSIENT_CODES.has(code)) ||
    message.startsWith("LOADING") ||
    message.startsWith("BUSY") ||
    message.startsWith("TRYAGAIN") ||
    message.startsWith("CLUSTERDOWN") ||
    message.includes("Connection is closed")
  ) {
    return new TransientError(`redis: ${message}`, { cause: error });
  }
  return error;
}

type ScriptCommand = (...args: (string | number)[]) => Promise<unknown>;

class IoredisConnection implements RedisConnection {
  private readonly client: Redis;

  constructor(client: Redis) {
    this.client = client;
  }

  async runScript(script: ScriptName, calls: readonly ScriptCall[]): Promise<unknown[]> {
    if (calls.length === 0) return [];
    const pipeline = this.client.pipeline();
    const command = (pipeline as unknown as Record<ScriptName, ScriptCommand>)[script];
    for (const call of calls) command.call(pipeline, call.keys.length, ...call.keys, ...call.args);
    let results: [Error | null, unknown][] | null;
    try {
      results = await pipeline.exec();
    } catch (error) {
      throw translate(error);
    }
    if (!results) throw new TransientError("redis: the pipeline was discarded");
    return results.map(([error, reply]) => {
      if (error) throw translate(error);
      return reply;
    });
  }

  async scanKeys(pattern: string): Promise<string[]> {
    const found: string[] = [];
    try {
      let cursor = "0";
      do {
        const [next, keys] = await this.client.scan(cursor, "MATCH", pattern, "COUNT", 1000);
        found.push(...keys);
        cursor = next;
      } while (cursor !== "0");
    } catch (error) {
      throw translate(error);
    }
    return found;
  }

  async hashFields(key: string, fields: readonly string[]): Promise<(string | null)[]> {
    try {
      return await this.client.hmget(key, ...fields);
    } catch (error) {
      throw translate(error);
    }
  }

  async deleteKeys(keys: readonly string[]): Promise<void> {
    try {
      for (let i = 0; i < keys.length; i += 500) await this.client.del(...keys.slice(i, i + 500));
    } catch (error) {
      throw translate(error);
    }
  }

  async configGet(name: string): Promise<string | undefined> {
    try {
      const reply = (await this.client.config("GET", name)) as string[];
      return reply.length >= 2 ? String(reply[1]) : undefined;
    } catch (error) {
      const translated = translate(error);
      if (translated instanceof TransientError) throw translated;
      return undefined;
    }
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }
}

/** Opens connections to one server; each is named `exactly:<purpose>`. */
export function ioredisConnect(options: RedisConnectionOptions): RedisConnect {
  return async (purpose) => {
    const base: RedisOptions = typeof options === "string" ? {} : options;
    const settings: RedisOptions = {
      ...base,
      connectionName: `exactly:${purpose}`.replace(/\s/g, "_"),
      lazyConnect: true,
      // A command is retried on a new connection by the sink's own recovery, not queued forever.
      maxRetriesPerRequest: 3,
    };
    const client = typeof options === "string" ? new Redis(options, settings) : new Redis(settings);
    for (const [name, lua] of Object.entries(SCRIPTS)) client.defineCommand(name, { lua });
    // Errors reach the caller through its commands; an unhandled 'error' event would end the process.
    client.on("error", () => {});
    try {
      await client.connect();
    } catch (error) {
      client.disconnect();
      throw translate(error);
    }
    return new IoredisConnection(client);
  };
}
