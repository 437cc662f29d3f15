// Step 3 for Redis Cluster: three redis-server processes of Debian's package (the one the
// single-server launcher installs), each with `cluster-enabled yes` and, as the sinks require,
// the append-only file fsynced on every write; then `redis-cli --cluster create` gives each a
// third of the slots (no replicas). A node's cluster configuration and AOF stay in its
// directory, so a restarted node rejoins with its slots and data.

import { Redis } from "ioredis";
import { aptInstall } from "../core/apt.ts";
import { type DaemonSpec, daemonLauncher } from "../core/launcher.ts";
import { logFile, pidFile, serviceDir } from "../core/paths.ts";
import { appendLog, capture, spawnDaemon, which } from "../core/proc.ts";
import type { Launcher, ServiceModule } from "../core/service-module.ts";
import { errorMessage, waitFor, withTimeout } from "../core/wait.ts";
import { writeRedisConfig } from "../redis/launcher.ts";
import type { RedisClusterEndpoint } from "./endpoint.ts";

const HOST = "127.0.0.1";
/**
 * Client ports, and each node's cluster bus at its port + 100 (`cluster-port`; Redis' default
 * is + 10000). All below Linux's ephemeral range (32768–60999): a port in it can be held by any
 * outgoing connection of the moment, and a node then fails to bind (seen once in CI on 47002).
 */
const PORTS = [27001, 27002, 27003];
const BUS_OFFSET = 100;
const SLOTS_READY_MS = 30_000;

const endpoint = (): RedisClusterEndpoint => ({ nodes: PORTS.map((port) => `${HOST}:${port}`) });

async function withNode<T>(port: number, use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({ host: HOST, port, lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 3_000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
    return await use(client);
  } finally {
    client.disconnect();
  }
}

/** The launcher of the three-node Redis Cluster: its module hands itself over when it loads this file. */
export function redisClusterLauncher(module: ServiceModule<RedisClusterEndpoint>): Launcher<RedisClusterEndpoint> {
  /** One node as a service of its own (pid file, log, PING as its probe), for the daemon launcher. */
  function nodeModule(index: number, port: number): ServiceModule<{ port: number }> {
    const name = `redis-cluster-${index + 1}`;
    return {
      name,
      envHint: module.envHint,
      fromEnv: () => undefined,
      toEnv: () => ({}),
      describe: () => `${HOST}:${port}`,
      startContainer: () => module.startContainer() as never,
      launcher: async () => nodes[index] as Launcher<{ port: number }>,
      probe: () => withNode(port, async (client) => `PONG: ${await client.ping()}`),
    };
  }

  function nodeSpec(index: number, port: number): DaemonSpec<{ port: number }> {
    const module = nodeModule(index, port);
    return {
      module,
      host: HOST,
      ports: [port, port + BUS_OFFSET],
      endpoint: () => ({ port }),
      looksLikeOurs: (cmdline) => cmdline.includes("redis-server") && cmdline.includes(`:${port}`),
      install: async (progress) => {
        if (!which("redis-server") || !which("redis-cli"))
          await aptInstall(["redis-server", "redis-tools"], logFile(module.name), progress);
      },
      start: async () => {
        const server = which("redis-server");
        if (!server) throw new Error("redis-server not found after installing it");
        const dir = serviceDir(module.name);
        const config = writeRedisConfig(dir, HOST, port, [
          "cluster-enabled yes",
          `cluster-port ${port + BUS_OFFSET}`,
          "cluster-config-file nodes.conf",
          "cluster-node-timeout 5000",
        ]);
        spawnDaemon(server, [config], { log: logFile(module.name), pidFile: pidFile(module.name), cwd: dir });
      },
      readyTimeoutMs: 30_000,
      stopSignal: "SIGTERM",
    };
  }

  const specs = PORTS.map((port, i) => nodeSpec(i, port));
  const nodes = specs.map((spec) => daemonLauncher(spec));

  async function clusterState(port: number): Promise<{ ok: boolean; knownNodes: number }> {
    const info = String(await withNode(port, (client) => client.cluster("INFO")));
    return {
      ok: /cluster_state:ok/.test(info),
      knownNodes: Number(/cluster_known_nodes:(\d+)/.exec(info)?.[1] ?? 0),
    };
  }

  /** Gives the three fresh nodes their slots, unless they already form the cluster (a restart). */
  async function formCluster(progress: (message: string) => void): Promise<void> {
    const states = await Promise.all(PORTS.map(clusterState));
    if (states.every((s) => s.knownNodes === PORTS.length)) return;
    if (states.some((s) => s.knownNodes > 1)) {
      throw new Error(
        `the nodes on ports ${PORTS.join(", ")} half form a cluster (known nodes: ${states.map((s) => s.knownNodes).join(", ")}); ` +
          `run \`pnpm services down redis-cluster\` and delete ${PORTS.map((_, i) => serviceDir(`redis-cluster-${i + 1}`)).join(", ")}`,
      );
    }
    progress("creating the cluster (redis-cli --cluster create, no replicas)");
    const cli = which("redis-cli");
    if (!cli) throw new Error("redis-cli not found (Debian's redis-tools)");
    const created = await capture(cli, [
      "--cluster",
      "create",
      ...PORTS.map((port) => `${HOST}:${port}`),
      "--cluster-replicas",
      "0",
      "--cluster-yes",
    ]);
    appendLog(logFile(module.name), `${created.stdout}\n${created.stderr}`);
    if (created.code !== 0)
      throw new Error(`redis-cli --cluster create failed (exit ${created.code}); see ${logFile(module.name)}`);
  }

  return {
    endpoint,
    runningPid: () => {
      const pids = nodes.map((node) => node.runningPid());
      return pids.every((pid) => pid !== undefined) ? pids[0] : undefined;
    },
    up: async (progress) => {
      let started = false;
      for (const [i, node] of nodes.entries()) {
        const result = await node.up((message) => progress(`node ${i + 1}: ${message}`));
        started ||= result.started;
      }
      try {
        await formCluster(progress);
        const detail = await untilServed();
        return { endpoint: endpoint(), started, detail };
      } catch (error) {
        // Into the log too, which CI prints when `up` fails; a stale nodes.conf is the usual cause.
        const dirs = PORTS.map((_, i) => serviceDir(`redis-cluster-${i + 1}`)).join(", ");
        appendLog(
          logFile(module.name),
          `=== ${new Date().toISOString()} up failed: ${errorMessage(error)} (if the nodes kept a cluster of other ports, stop them and delete ${dirs})`,
        );
        throw error;
      }
    },
    down: async (progress) => {
      let stopped = false;
      for (const [i, node] of nodes.entries()) {
        stopped = (await node.down((message) => progress(`node ${i + 1}: ${message}`))) || stopped;
      }
      return stopped;
    },
    owns: (given) =>
      given.nodes.join(",") === endpoint().nodes.join(",") && nodes.every((n) => n.runningPid() !== undefined),
  };

  /**
   * Waits until every node says cluster_state:ok (asked one by one: a cluster client would wait
   * forever on a cluster still settling), then probes the cluster as a client sees it.
   */
  async function untilServed(): Promise<string> {
    await waitFor(
      "cluster_state:ok on every node",
      async () => {
        const states = await Promise.all(PORTS.map(clusterState));
        if (!states.every((s) => s.ok)) throw new Error("not every node says cluster_state:ok yet");
      },
      { timeoutMs: SLOTS_READY_MS, intervalMs: 250 },
    );
    return waitFor("every slot served", () => withTimeout(module.probe(endpoint()), 10_000, "the cluster probe"), {
      timeoutMs: SLOTS_READY_MS,
      intervalMs: 500,
    });
  }
}
