// Process supervision shared by the launchers: run a command into a log, start a daemon with
// a pid file, check and stop processes by pid, take turns through a lock file. Only ever signals pids that the launchers recorded
// themselves, and only after checking that the pid still runs the program they started (pids are
// reused by the kernel, a stale pid file must never kill a stranger).

import { execFile, spawn } from "node:child_process";
import {
  accessSync,
  appendFileSync,
  closeSync,
  constants,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { connect } from "node:net";
import { delimiter, dirname, join } from "node:path";
import { sleep } from "./wait.ts";

export type Progress = (message: string) => void;

export function appendLog(log: string, line: string): void {
  mkdirSync(dirname(log), { recursive: true });
  appendFileSync(log, `${line}\n`);
}

/** Finds an executable on PATH, plus the places Debian and the Go tarball put tools off PATH. */
export function which(name: string): string | undefined {
  const dirs = [
    ...(process.env.PATH ?? "").split(delimiter),
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
    "/usr/local/go/bin",
  ];
  for (const dir of dirs) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

export interface RunOptions {
  /** File that receives the command line and everything the command prints. */
  log: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** For slow commands: says `heartbeat` every 30 s so a long install doesn't look hung. */
  progress?: Progress;
  heartbeat?: string;
}

/** Runs a command to completion with its output appended to a log; throws if it fails. */
export async function run(command: string, args: string[], options: RunOptions): Promise<void> {
  appendLog(options.log, `\n$ ${[command, ...args].join(" ")}`);
  const fd = openSync(options.log, "a");
  const started = Date.now();
  const { progress, heartbeat } = options;
  const timer =
    progress && heartbeat
      ? setInterval(() => {
          progress(`${heartbeat} (${Math.round((Date.now() - started) / 1000)} s so far)`);
        }, 30_000)
      : undefined;
  try {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ["ignore", fd, fd],
    });
    const outcome = await new Promise<string | number>((resolve, reject) => {
      child.on("error", reject);
      child.on("exit", (code, signal) => resolve(code ?? signal ?? "unknown"));
    });
    if (outcome !== 0) {
      throw new Error(`\`${command} ${args.slice(0, 2).join(" ")}\` failed (exit ${outcome}); see ${options.log}`);
    }
  } finally {
    if (timer) clearInterval(timer);
    closeSync(fd);
  }
}

export interface Captured {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a short command and returns what it printed; never throws for a non-zero exit. */
export function capture(command: string, args: string[], env?: NodeJS.ProcessEnv): Promise<Captured> {
  return new Promise((resolve) => {
    execFile(command, args, { env: env ?? process.env, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 127) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr || (error?.message ?? "")) });
    });
  });
}

export interface DaemonOptions {
  log: string;
  pidFile: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/**
 * Starts a long-running server detached from this process (it outlives the CLI), with its
 * output appended to `log`, and records its pid.
 */
export function spawnDaemon(command: string, args: string[], options: DaemonOptions): number {
  appendLog(options.log, `\n=== ${new Date().toISOString()} starting ${command}`);
  const fd = openSync(options.log, "a");
  try {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      detached: true,
      stdio: ["ignore", fd, fd],
    });
    // An exec failure is reported asynchronously; without a listener it would crash us.
    child.on("error", (error) => appendLog(options.log, `failed to start ${command}: ${error.message}`));
    child.unref();
    if (child.pid === undefined) throw new Error(`could not start ${command}; see ${options.log}`);
    writePid(options.pidFile, child.pid);
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

export function readPid(file: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(file, "utf8").trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

export function writePid(file: string, pid: number): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${pid}\n`);
}

export function removeFile(file: string): void {
  rmSync(file, { force: true });
}

/** True while `pid` runs and is not a zombie waiting to be reaped. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM means it exists but belongs to someone else: still alive.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** The command line of a running process, arguments joined by spaces ("" if it is gone). */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
  } catch {
    return "";
  }
}

/**
 * The pid recorded in `file` if that process still runs and its command line still looks like
 * the program we started (`looksLikeOurs`), else undefined.
 */
export function ownedPid(file: string, looksLikeOurs: (cmdline: string) => boolean): number | undefined {
  const pid = readPid(file);
  if (pid === undefined || !isAlive(pid)) return undefined;
  return looksLikeOurs(commandLine(pid)) ? pid : undefined;
}

/** Signals a process and waits until it has exited, escalating to SIGKILL after `timeoutMs`. */
export async function stopProcess(pid: number, signal: NodeJS.Signals, timeoutMs: number): Promise<void> {
  if (!isAlive(pid)) return;
  process.kill(pid, signal);
  const deadline = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) {
      process.kill(pid, "SIGKILL");
      const killDeadline = Date.now() + 10_000;
      while (isAlive(pid) && Date.now() < killDeadline) await sleep(100);
      if (isAlive(pid)) throw new Error(`process ${pid} did not exit after SIGKILL`);
      return;
    }
    await sleep(100);
  }
}

/** True if something accepts TCP connections on host:port. */
export function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/**
 * Runs `task` while holding a lock file, so that two processes bringing up the same service
 * (two terminals, or two vitest projects' global setups) take turns instead of racing for the
 * port. A lock whose owner died is taken over.
 */
export async function withLock<T>(
  file: string,
  onWait: (owner: number) => void,
  task: () => Promise<T>,
  timeoutMs = 30 * 60_000,
): Promise<T> {
  mkdirSync(dirname(file), { recursive: true });
  const deadline = Date.now() + timeoutMs;
  let waitingFor: number | undefined;
  for (;;) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: "wx" });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const owner = readPid(file);
    // An empty lock file is one being written right now, unless it has been empty for a while.
    const stale = owner === undefined ? Date.now() - mtimeMs(file) > 5_000 : !isAlive(owner);
    if (stale) {
      removeFile(file);
      continue;
    }
    if (owner !== undefined && owner !== waitingFor) {
      waitingFor = owner;
      onWait(owner);
    }
    if (Date.now() > deadline) throw new Error(`${file} is still held by process ${owner}`);
    await sleep(500);
  }
  try {
    return await task();
  } finally {
    removeFile(file);
  }
}

function mtimeMs(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}
