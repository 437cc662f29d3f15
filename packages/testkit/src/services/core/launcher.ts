// The local launcher's start-or-reuse sequence, which every service's server goes through: a
// service describes its server as a DaemonSpec (ports, how to install and start it, how to tell
// its process from a stranger's) and gets a Launcher from daemonLauncher().

import { lockFile, logFile, pidFile } from "./paths.ts";
import {
  appendLog,
  isAlive,
  ownedPid,
  type Progress,
  portOpen,
  readPid,
  removeFile,
  stopProcess,
  withLock,
} from "./proc.ts";
import type { CrashOptions, Launcher, ServiceModule, UpResult } from "./service-module.ts";
import { errorMessage, waitFor } from "./wait.ts";

export interface DaemonSpec<E> {
  /** The service it serves: names the log and pid files, gives the health probe. */
  module: ServiceModule<E>;
  host: string;
  /** Every port the server binds: all must be free before we start it. */
  ports: number[];
  endpoint: () => E;
  /** Recognises our server in /proc/<pid>/cmdline, so a reused pid is never mistaken for it. */
  looksLikeOurs: (cmdline: string) => boolean;
  /** Installs what is missing (idempotent, may take minutes the first time). */
  install: (progress: Progress) => Promise<void>;
  /** Starts the server in the background, records its pid in the pid file. */
  start: (progress: Progress) => Promise<void>;
  /** Extra work once the server answers (e.g. create a database), before the health probe. */
  afterStart?: () => Promise<void>;
  readyTimeoutMs: number;
  stopSignal: NodeJS.Signals;
}

/** The launcher of a service that runs one server. */
export function daemonLauncher<E>(spec: DaemonSpec<E>): Launcher<E> {
  return {
    endpoint: spec.endpoint,
    runningPid: () => daemonPid(spec),
    up: (progress) => upDaemon(spec, progress),
    down: (progress) => downDaemon(spec, progress),
    crash: (options) => crashDaemon(spec, options),
  };
}

/**
 * SIGKILL, as a crash of the server's machine would end it, then (after `downMs`: an outage)
 * start it again on the same data. The whole process group goes (the server was started as its leader): a child it forked
 * (Redis rewriting its append-only file) would otherwise live on holding the listening socket,
 * and the port would look taken by a stranger.
 */
export async function crashDaemon<E>(spec: DaemonSpec<E>, options: CrashOptions = {}): Promise<void> {
  const pid = daemonPid(spec);
  if (pid === undefined) throw new Error(`the launcher's ${spec.module.name} is not running`);
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    process.kill(pid, "SIGKILL");
  }
  await waitFor(
    `${spec.module.name} (pid ${pid}) gone and its ports closed`,
    async () => {
      if (isAlive(pid)) throw new Error(`pid ${pid} still runs`);
      for (const port of spec.ports) if (await portOpen(spec.host, port)) throw new Error(`port ${port} still open`);
    },
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  if (options.downMs) await new Promise((resolve) => setTimeout(resolve, options.downMs));
  await upDaemon(spec, () => undefined);
}

/** The module's launcher, taking turns with other processes: one `up` or `down` at a time. */
export async function loadLauncher<E>(module: ServiceModule<E>): Promise<Launcher<E>> {
  const launcher = await module.launcher();
  const lock = lockFile(module.name);
  const waitNote = (progress: Progress) => (owner: number) =>
    progress(`waiting for process ${owner}, which is starting or stopping ${module.name}`);
  return {
    ...launcher,
    up: (progress) => withLock(lock, waitNote(progress), () => launcher.up(progress)),
    down: (progress) => withLock(lock, waitNote(progress), () => launcher.down(progress)),
  };
}

export function daemonPid<E>(spec: DaemonSpec<E>): number | undefined {
  return ownedPid(pidFile(spec.module.name), spec.looksLikeOurs);
}

/** Waits until the server is healthy, giving up at once if its process dies. */
export async function waitUntilHealthy<E>(spec: DaemonSpec<E>): Promise<string> {
  const { name } = spec.module;
  const pid = readPid(pidFile(name));
  return waitFor(
    `${name} at ${spec.host}:${spec.ports[0]}`,
    async () => {
      await spec.afterStart?.();
      return spec.module.probe(spec.endpoint());
    },
    {
      timeoutMs: spec.readyTimeoutMs,
      intervalMs: 1_000,
      giveUpIf: () =>
        pid === undefined || !isAlive(pid) ? `the server process exited; see ${logFile(name)}` : undefined,
    },
  );
}

export async function upDaemon<E>(spec: DaemonSpec<E>, progress: Progress): Promise<UpResult<E>> {
  try {
    return await startOrReuse(spec, progress);
  } catch (error) {
    // Into the log too, so that the log alone (CI prints its tail) tells why `up` failed.
    appendLog(logFile(spec.module.name), `=== ${new Date().toISOString()} up failed: ${errorMessage(error)}`);
    throw error;
  }
}

async function startOrReuse<E>(spec: DaemonSpec<E>, progress: Progress): Promise<UpResult<E>> {
  const { name, envHint } = spec.module;
  const running = daemonPid(spec);
  if (running !== undefined) {
    progress(`already running (pid ${running}), checking health`);
    const detail = await waitUntilHealthy(spec);
    return { endpoint: spec.endpoint(), started: false, detail };
  }
  removeFile(pidFile(name));
  for (const port of spec.ports) {
    if (await portOpen(spec.host, port)) {
      throw new Error(
        `port ${port} on ${spec.host} is taken by a process this launcher did not start; ` +
          `stop it, or point ${envHint} at a server you run yourself`,
      );
    }
  }
  await spec.install(progress);
  progress("starting");
  await spec.start(progress);
  progress(`started (pid ${readPid(pidFile(name))}), waiting until it is healthy`);
  try {
    const detail = await waitUntilHealthy(spec);
    return { endpoint: spec.endpoint(), started: true, detail };
  } catch (error) {
    // A half-started server would only confuse the next `up`: stop what we started.
    await downDaemon(spec, () => undefined).catch(() => undefined);
    throw error;
  }
}

export async function downDaemon<E>(spec: DaemonSpec<E>, progress: Progress): Promise<boolean> {
  const file = pidFile(spec.module.name);
  const pid = daemonPid(spec);
  if (pid === undefined) {
    removeFile(file);
    return false;
  }
  progress(`stopping pid ${pid}`);
  await stopProcess(pid, spec.stopSignal, 60_000);
  removeFile(file);
  return true;
}
