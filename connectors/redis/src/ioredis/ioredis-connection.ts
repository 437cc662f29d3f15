/**
 * The `RedisConnection` port on ioredis (the only module that imports it; ioredis is pinned
 * exactly, as its script handling is relied on). Each script is a custom command
 * (`defineCommand`): ioredis sends it by EVALSHA, and after a NOSCRIPT sends the script
 * itself, which loads it again.
 */
import { ConfigurationError, TransientError } from "@exactly/core";
import calculateSlot from "cluster-key-slot";
import { Cluster, type ClusterNode, type ClusterOptions, Redis, type RedisOptions } from "ioredis";
import { SCRIPTS, type ScriptName } from "../lua/scripts.ts";
import type { RedisConnect, RedisConnection, ScriptCall } from "../redis-connection.ts";
import { endpointsOf, networkErrorOf, unreachableCluster, unreachableError } from "./unreachable.ts";

/** A Redis Cluster: some of its nodes (the client learns the others), and ioredis' cluster options. */
export interface RedisClusterConnection {
  readonly clusterNodes: readonly ClusterNode[];
  readonly clusterOptions?: ClusterOptions;
}

/** A `redis://` URL, ioredis options, or a Cluster. Credentials are never logged. */
export type RedisConnectionOptions = string | RedisOptions | RedisClusterConnection;

function isCluster(options: RedisConnectionOptions): options is RedisClusterConnection {
  return typeof options === "object" && "clusterNodes" in options;
}

/** Connection-level failures: the command may or may not have reached the server. */
const TRANSIENT_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND"]);

/**
 * Whether an error, or one it wraps, answers a login (AUTH, or HELLO with AUTH): ioredis keeps
 * the command on the error, and its arguments are the password, so such an error is never kept.
 */
function answersLogin(error: unknown): boolean {
  for (let depth = 0, e = error as LinkedError | undefined; e && depth < 8; depth++) {
    const name = e.command?.name;
    if (name === "auth" || name === "hello") return true;
    e = (e.lastNodeError ?? e.cause) as LinkedError | undefined;
  }
  return false;
}

interface LinkedError {
  readonly command?: { readonly name?: unknown };
  readonly lastNodeError?: unknown;
  readonly cause?: unknown;
}

function translate(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  if (answersLogin(error)) {
    const reply = refusedCredentials(error);
    return reply !== undefined ? credentialsError(reply) : new TransientError(`redis: ${error.message}`);
  }
  const code = (error as { code?: string }).code;
  const message = error.message;
  if (
    (code !== undefined && TRANSIENT_CODES.has(code)) ||
    message.startsWith("LOADING") ||
    message.startsWith("BUSY") ||
    message.startsWith("TRYAGAIN") ||
    message.startsWith("CLUSTERDOWN") ||
    message.includes("Connection is closed") ||
    message.includes("Failed to refresh slots cache") ||
    message.includes("None of startup nodes is available")
  ) {
    return new TransientError(`redis: ${message}`, { cause: error });
  }
  return error;
}

/** Replies that say the credentials are wrong or missing: a setting to fix, not a fault to retry. */
const REFUSED_CREDENTIALS = /^(WRONGPASS|NOAUTH|NOPERM|ERR invalid password|ERR AUTH)/;

/**
 * The refusal of the credentials among what the client reported, if any: on a Cluster the reply
 * is a node's error, which ioredis keeps in `lastNodeError`.
 */
function refusedCredentials(error: unknown): string | undefined {
  for (
    let e = error as { message?: unknown; lastNodeError?: unknown } | undefined;
    e;
    e = e.lastNodeError as typeof e
  ) {
    if (typeof e.message === "string" && REFUSED_CREDENTIALS.test(e.message)) return e.message;
  }
  return undefined;
}

/**
 * A refused login as a ConfigurationError naming `connection`. Only the server's message is
 * kept: ioredis' error holds the command it answered, whose arguments are the password.
 */
function credentialsError(reply: string): ConfigurationError {
  return new ConfigurationError(
    "connection",
    `the server refused the credentials (${reply.split("\n")[0]}); check the user name and password in the URL or options`,
  );
}

/**
 * A URL ioredis could not parse, as a ConfigurationError naming `connection`. Only the parser's
 * message is kept: its error holds the URL (`input`), password and all.
 */
function malformedUrl(error: unknown): ConfigurationError {
  const reason = error instanceof Error ? error.message : "unreadable";
  return new ConfigurationError(
    "connection",
    `is not a valid Redis URL or node (${reason}); it is not shown here, as it may hold a password`,
  );
}

type ScriptCommand = (...args: (string | number)[]) => Promise<unknown>;

type Pipeline = ReturnType<Redis["pipeline"]>;

/**
 * Reads a result back, for tools that check what a job wrote (the demo's verdict); the sinks
 * never read values, so this is not part of their port.
 */
export interface RedisReader {
  /** `HGETALL key`. */
  hashAll(key: string): Promise<Record<string, string>>;
  /** `GET` of each key, pipelined (on a Cluster, by slot). */
  strings(keys: readonly string[]): Promise<(string | null)[]>;
  close(): Promise<void>;
}

/** What {@link connectRedis} returns: the port, and the reads a tool makes. */
export interface RedisToolConnection extends RedisConnection {
  /** @deprecated Use {@link connectRedisReader}: reading values back is not the sinks' port. */
  hashAll(key: string): Promise<Record<string, string>>;
  /** @deprecated Use {@link connectRedisReader}: reading values back is not the sinks' port. */
  strings(keys: readonly string[]): Promise<(string | null)[]>;
}

class IoredisConnection implements RedisConnection, RedisReader {
  private readonly client: Redis | Cluster;
  readonly clustered: boolean;

  constructor(client: Redis | Cluster) {
    this.client = client;
    this.clustered = client instanceof Cluster;
  }

  slotOf(key: string): number | undefined {
    return this.clustered ? calculateSlot(key) : undefined;
  }

  async runScript(script: ScriptName, calls: readonly ScriptCall[]): Promise<unknown[]> {
    return this.pipelined(
      calls,
      (call) => call.keys[0] ?? "",
      (pipeline, call) => {
        const command = (pipeline as unknown as Record<ScriptName, ScriptCommand>)[script];
        command.call(pipeline, call.keys.length, ...call.keys, ...call.args);
      },
    );
  }

  async runCommands(commands: readonly (readonly (string | number)[])[]): Promise<void> {
    await this.pipelined(
      commands,
      (command) => String(command[1] ?? ""),
      (pipeline, [name, ...args]) => pipeline.call(String(name), ...args),
    );
  }

  /**
   * Sends `items` as pipelines and returns their replies in order, or rejects with the first
   * error. One pipeline on a single server; on a Cluster, one per master, sent at once:
   * ioredis refuses a pipeline whose keys are served by different nodes (redis/ioredis#1602).
   * Each item's keys must share one slot; `keyOf` gives one of them. Items for one master
   * keep their order; across masters there is none to keep.
   */
  private async pipelined<I>(
    items: readonly I[],
    keyOf: (item: I) => string,
    add: (pipeline: Pipeline, item: I) => void,
  ): Promise<unknown[]> {
    if (items.length === 0) return [];
    if (!(this.client instanceof Cluster)) {
      const pipeline = this.client.pipeline();
      for (const item of items) add(pipeline, item);
      return this.execute(pipeline);
    }
    const cluster = this.client;
    const groups = new Map<string, number[]>();
    items.forEach((item, i) => {
      const slot = calculateSlot(keyOf(item));
      // The master serving the slot, as ioredis' slot table has it (a MOVED reply updates it).
      const group = cluster.slots[slot]?.[0] ?? `slot ${slot}`;
      let members = groups.get(group);
      if (!members) {
        members = [];
        groups.set(group, members);
      }
      members.push(i);
    });
    const replies = new Array<unknown>(items.length);
    const sent = [...groups.values()].map(async (members) => {
      const pipeline = cluster.pipeline();
      for (const i of members) add(pipeline, items[i] as I);
      const results = await this.execute(pipeline);
      members.forEach((i, at) => {
        replies[i] = results[at];
      });
    });
    const outcomes = await Promise.allSettled(sent);
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === "rejected");
    if (failed) throw failed.reason;
    return replies;
  }

  /** Runs a pipeline: every reply in order, or the first error (translated). */
  private async execute(pipeline: Pipeline): Promise<unknown[]> {
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

  /** The servers a command about every key goes to: each master of a Cluster, or the one server. */
  private servers(): Redis[] {
    return this.client instanceof Cluster ? this.client.nodes("master") : [this.client];
  }

  async hashAll(key: string): Promise<Record<string, string>> {
    try {
      return await this.client.hgetall(key);
    } catch (error) {
      throw translate(error);
    }
  }

  async strings(keys: readonly string[]): Promise<(string | null)[]> {
    return (await this.pipelined(
      keys,
      (key) => key,
      (pipeline, key) => pipeline.get(key),
    )) as (string | null)[];
  }

  async scanKeys(pattern: string): Promise<string[]> {
    const found: string[] = [];
    try {
      for (const server of this.servers()) {
        let cursor = "0";
        do {
          const [next, keys] = await server.scan(cursor, "MATCH", pattern, "COUNT", 1000);
          found.push(...keys);
          cursor = next;
        } while (cursor !== "0");
      }
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
    // One key per DEL: on a Cluster a DEL of keys in several slots is refused (CROSSSLOT).
    for (let i = 0; i < keys.length; i += 1000) {
      await this.runCommands(keys.slice(i, i + 1000).map((key) => ["DEL", key]));
    }
  }

  async configGet(name: string): Promise<string | undefined> {
    // On a Cluster, every master's: one that could lose writes is enough to lose them.
    const values = new Set<string | undefined>();
    for (const server of this.servers()) {
      try {
        const reply = (await server.config("GET", name)) as string[];
        values.add(reply.length >= 2 ? String(reply[1]) : undefined);
      } catch (error) {
        const translated = translate(error);
        if (translated instanceof TransientError) throw translated;
        values.add(undefined);
      }
    }
    if (values.has(undefined)) return undefined;
    return values.size === 1 ? [...values][0] : `different on the masters: ${[...values].join(", ")}`;
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }
}

/** One connection on the connector's port, for tools (cleanup, inspection); close it when done. */
export function connectRedis(options: RedisConnectionOptions, purpose = "tool"): Promise<RedisToolConnection> {
  return openIoredis(options, purpose);
}

/** One connection that reads results back, for tools that verify a job's output; close it when done. */
export function connectRedisReader(options: RedisConnectionOptions, purpose = "reader"): Promise<RedisReader> {
  return openIoredis(options, purpose);
}

/** Opens connections to one server, or to a Cluster; each is named `exactly:<purpose>`. */
export function ioredisConnect(options: RedisConnectionOptions): RedisConnect {
  return (purpose) => openIoredis(options, purpose);
}

async function openIoredis(options: RedisConnectionOptions, purpose: string): Promise<IoredisConnection> {
  const connectionName = `exactly:${purpose}`.replace(/\s/g, "_");
  // A command is retried on a new connection by the sink's own recovery, not queued forever.
  const maxRetriesPerRequest = 3;
  let client: Redis | Cluster;
  try {
    if (isCluster(options)) {
      const given = options.clusterOptions ?? {};
      client = new Cluster([...options.clusterNodes], {
        ...given,
        lazyConnect: true,
        redisOptions: { ...given.redisOptions, connectionName, maxRetriesPerRequest },
      });
    } else {
      const base: RedisOptions = typeof options === "string" ? {} : options;
      const settings: RedisOptions = { ...base, connectionName, lazyConnect: true, maxRetriesPerRequest };
      client = typeof options === "string" ? new Redis(options, settings) : new Redis(settings);
    }
  } catch (error) {
    throw malformedUrl(error);
  }
  for (const [name, lua] of Object.entries(SCRIPTS)) client.defineCommand(name, { lua });
  // Errors reach the caller through its commands; an unhandled 'error' event would end the
  // process. A refused login, a refused port and an unknown host are reported only this way
  // (the connect itself fails with "Connection is closed"), so the first of each is kept.
  let refused: string | undefined;
  let unreachable: ReturnType<typeof networkErrorOf>;
  client.on("error", (error: unknown) => {
    refused ??= refusedCredentials(error);
    unreachable ??= networkErrorOf(error);
  });
  try {
    await client.connect();
    // A server that requires a password accepts a connection without one, and refuses its
    // first command (NOAUTH): asked here, so that surfaces at open.
    await client.ping();
  } catch (error) {
    client.disconnect();
    // A Cluster parses its nodes' URLs only when it connects.
    if (error instanceof URIError || (error as { code?: unknown })?.code === "ERR_INVALID_URL")
      throw malformedUrl(error);
    const reply = refused ?? refusedCredentials(error);
    if (reply !== undefined) throw credentialsError(reply);
    throw (await whyUnreachable(client, options, unreachable ?? networkErrorOf(error))) ?? translate(error);
  }
  return new IoredisConnection(client);
}

/** Why the first connection failed when it is the network (a refused port, an unknown host), naming host and port. */
async function whyUnreachable(
  client: Redis | Cluster,
  options: RedisConnectionOptions,
  network: ReturnType<typeof networkErrorOf>,
): Promise<Error | undefined> {
  if (!isCluster(options)) {
    if (!network || !(client instanceof Redis)) return undefined;
    const { host, port, path } = client.options;
    return unreachableError({ host: host ?? "localhost", port: port ?? 6379, ...(path ? { path } : {}) }, network);
  }
  const nodes = endpointsOf(options.clusterNodes);
  // The startup nodes' names are resolved before any connection: an unknown one fails the connect with its hostname.
  const named = network?.hostname === undefined ? undefined : nodes.find((node) => node.host === network.hostname);
  if (network && named) return unreachableError(named, network);
  return unreachableCluster(nodes);
}
