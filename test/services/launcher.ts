// What every local launcher offers, and the start-or-reuse sequence they share.

import { logFile, pidFile } from "./core/paths.ts";
import {
  appendLog,
  isAlive,
  ownedPid,
  type Progress,
  portOpen,
  readPid,
  removeFile,
  stopProcess,
} from "./core/proc.ts";
import { waitFor } from "./core/wait.ts";
import { probe } from "./probes.ts";
import { ENV_HINT, type Endpoints, type ServiceName } from "./service-env.ts";

export interface UpResult<S extends ServiceName> {
  endpoint: Endpoints[S];
  /** False when a server this launcher had started earlier was already running and reused. */
  started: boolean;
  detail: string;
}

export interface Launcher<S extends ServiceName> {
  readonly service: S;
  /** Where this launcher's server listens (fixed loopback ports), whether or not it runs. */
  endpoint(): Endpoints[S];
  /** Pid of the server this launcher started, while it still runs. */
  runningPid(): number | undefined;
  /** Installs what is missing, starts the server unless ours already runs, waits until healthy. */
  up(progress: Progress): Promise<UpResult<S>>;
  /** Stops the server if this launcher started it, and waits until it has exited. */
  down(progress: Progress): Promise<boolean>;
  /** Which server program runs, where a launcher has a choice (S3: "minio" or "moto"). */
  implementation?(): string;
}

export interface DaemonSpec<S extends ServiceName> {
  service: S;
  host: string;
  /** Every port the server binds: all must be free before we start it. */
  ports: number[];
  endpoint: () => Endpoints[S];
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

export function daemonPid<S extends ServiceName>(spec: DaemonSpec<S>): number | undefined {
  return ownedPid(pidFile(spec.service), spec.looksLikeOurs);
}

/** Waits until the server is healthy, giving up at once if its process dies. */
export async function waitUntilHealthy<S extends ServiceName>(spec: DaemonSpec<S>): Promise<string> {
  const pid = readPid(pidFile(spec.service));
  return waitFor(
    `${spec.service} at ${spec.host}:${spec.ports[0]}`,
    async () => {
      await spec.afterStart?.();
      return probe(spec.service, spec.endpoint());
    },
    {
      timeoutMs: spec.readyTimeoutMs,
      intervalMs: 1_000,
      giveUpIf: () =>
        pid === undefined || !isAlive(pid) ? `the server process exited; see ${logFile(spec.service)}` : undefined,
    },
  );
}

export async function upDaemon<S extends ServiceName>(spec: DaemonSpec<S>, progress: Progress): Promise<UpResult<S>> {
  try {
    return await startOrReuse(spec, progress);
  } catch (error) {
    // Into the log too, so that the log alone (CI prints its tail) tells why `up` failed.
    appendLog(logFile(spec.service), `=== ${new Date().toISOString()} up failed: ${(error as Error).message}`);
    throw error;
  }
}

async function startOrReuse<S extends ServiceName>(spec: DaemonSpec<S>, progress: Progress): Promise<UpResult<S>> {
  const running = daemonPid(spec);
  if (running !== undefined) {
    progress(`already running (pid ${running}), checking health`);
    const detail = await waitUntilHealthy(spec);
    return { endpoint: spec.endpoint(), started: false, detail };
  }
  removeFile(pidFile(spec.service));
  for (const port of spec.ports) {
    if (await portOpen(spec.host, port)) {
      throw new Error(
        `port ${port} on ${spec.host} is taken by a process this launcher did not start; ` +
          `stop it, or point ${ENV_HINT[spec.service]} at a server you run yourself`,
      );
    }
  }
  await spec.install(progress);
  progress("starting");
  await spec.start(progress);
  progress(`started (pid ${readPid(pidFile(spec.service))}), waiting until it is healthy`);
  try {
    const detail = await waitUntilHealthy(spec);
    return { endpoint: spec.endpoint(), started: true, detail };
  } catch (error) {
    // A half-started server would only confuse the next `up`: stop what we started.
    await downDaemon(spec, () => undefined).catch(() => undefined);
    throw error;
  }
}

export async function downDaemon<S extends ServiceName>(spec: DaemonSpec<S>, progress: Progress): Promise<boolean> {
  const pid = daemonPid(spec);
  if (pid === undefined) {
    removeFile(pidFile(spec.service));
    return false;
  }
  progress(`stopping pid ${pid}`);
  await stopProcess(pid, spec.stopSignal, 60_000);
  removeFile(pidFile(spec.service));
  return true;
}
