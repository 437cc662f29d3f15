// Step 3 for Redis: Debian's redis-server package, loopback only, with the append-only file
// fsynced on every write: the Redis sinks refuse a server that can lose acknowledged writes
// (I7), and the fault tests SIGKILL redis-server and expect every acknowledged write back. No
// RDB snapshots (they would only cost disk writes).

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { aptInstall } from "../core/apt.ts";
import { type DaemonSpec, daemonLauncher, daemonPid, downDaemon, upDaemon } from "../core/launcher.ts";
import { logFile, pidFile, serviceDir } from "../core/paths.ts";
import { spawnDaemon, which } from "../core/proc.ts";
import type { Launcher, ServiceModule } from "../core/service-module.ts";
import type { RedisEndpoint } from "./endpoint.ts";

const HOST = "127.0.0.1";
const PORT = 56379;

export function redisServer(): string | undefined {
  return which("redis-server");
}

/**
 * Writes `<dir>/redis.conf` for a server of ours and returns its path: loopback, in the
 * foreground, the append-only file fsynced on every write and no RDB; `extra` lines after.
 */
export function writeRedisConfig(dir: string, host: string, port: number, extra: readonly string[] = []): string {
  const config = join(dir, "redis.conf");
  const lines = [
    `bind ${host}`,
    `port ${port}`,
    "daemonize no",
    'logfile ""',
    `dir "${dir}"`,
    'save ""',
    "appendonly yes",
    "appendfsync always",
    ...extra,
    "",
  ];
  writeFileSync(config, lines.join("\n"));
  return config;
}

/** The launcher of the Redis server: its module hands itself over when it loads this file. */
export function redisLauncher(module: ServiceModule<RedisEndpoint>): Launcher<RedisEndpoint> {
  const spec: DaemonSpec<RedisEndpoint> = {
    module,
    host: HOST,
    ports: [PORT],
    endpoint: () => ({ url: `redis://${HOST}:${PORT}` }),
    // redis-server replaces its command line with "redis-server <bind>:<port>".
    looksLikeOurs: (cmdline) => cmdline.includes("redis-server") && cmdline.includes(`:${PORT}`),
    install: async (progress) => {
      if (!redisServer()) await aptInstall(["redis-server"], logFile("redis"), progress);
    },
    start: async () => {
      const server = redisServer();
      if (!server) throw new Error("redis-server not found after installing it");
      const dir = serviceDir("redis");
      const config = writeRedisConfig(dir, HOST, PORT);
      spawnDaemon(server, [config], { log: logFile("redis"), pidFile: pidFile("redis"), cwd: dir });
    },
    readyTimeoutMs: 30_000,
    stopSignal: "SIGTERM",
  };

  /** Whether `endpoint` is this launcher's server, running now (so a test may restart or crash it). */
  function owns(endpoint: RedisEndpoint): boolean {
    let parsed: URL;
    try {
      parsed = new URL(endpoint.url);
    } catch {
      return false;
    }
    const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(parsed.hostname);
    return loopback && Number(parsed.port || 6379) === PORT && daemonPid(spec) !== undefined;
  }

  /** SIGTERM (Redis fsyncs the append-only file and exits), then start again on the same file. */
  async function restart(): Promise<void> {
    if (daemonPid(spec) === undefined) throw new Error("the launcher's Redis is not running");
    await downDaemon(spec, () => undefined);
    await upDaemon(spec, () => undefined);
  }

  return { ...daemonLauncher(spec), owns, restart };
}
