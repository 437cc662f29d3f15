// Installing what the launchers need on Debian (as root): apt packages and the toolchains the
// Kafka and S3 launchers build with. Everything checks first and installs only what is missing.

import { existsSync, rmSync, writeFileSync } from "node:fs";
import { capture, type Progress, run, which } from "./proc.ts";

const APT_ENV = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };

// apt-get holds a machine-wide lock, so the launchers' installs queue behind each other instead
// of racing; and the package lists are refreshed at most once per process.
let aptQueue: Promise<unknown> = Promise.resolve();
let aptListsFresh = false;

export async function debInstalled(pkg: string): Promise<boolean> {
  const result = await capture("dpkg-query", ["--status", pkg]);
  return result.code === 0 && /^Status: install ok installed$/m.test(result.stdout);
}

/** Installs the Debian packages that are not installed yet. */
export function aptInstall(packages: string[], log: string, progress: Progress): Promise<void> {
  const job = aptQueue.then(() => installMissing(packages, log, progress));
  aptQueue = job.catch(() => undefined);
  return job;
}

async function installMissing(packages: string[], log: string, progress: Progress): Promise<void> {
  const missing: string[] = [];
  for (const pkg of packages) if (!(await debInstalled(pkg))) missing.push(pkg);
  if (missing.length === 0) return;
  const command = `apt-get install -y ${missing.join(" ")}`;
  if (!which("apt-get")) {
    throw new Error(`missing ${missing.join(", ")} and this is not a Debian system: install them yourself`);
  }
  if (process.getuid?.() !== 0) throw new Error(`missing ${missing.join(", ")}: run \`sudo ${command}\``);
  progress(`installing ${missing.join(", ")} with apt-get`);
  const options = { log, env: APT_ENV, progress, heartbeat: `still installing ${missing.join(", ")}` };
  if (!aptListsFresh) {
    await run("apt-get", ["update"], options);
    aptListsFresh = true;
  }
  await withoutServiceAutostart(() =>
    run("apt-get", ["install", "-y", "--no-install-recommends", ...missing], options),
  );
}

/**
 * Debian packages of servers start a default instance on install (Redis on 6379, a Postgres
 * "main" cluster on 5432). We start our own on other ports, so a stray system instance would only
 * be a process nobody asked for; the standard policy-rc.d hook tells the package scripts not to
 * start anything while we install. An existing policy is left alone.
 */
async function withoutServiceAutostart<T>(install: () => Promise<T>): Promise<T> {
  const policy = "/usr/sbin/policy-rc.d";
  if (existsSync(policy)) return install();
  writeFileSync(policy, "#!/bin/sh\n# exactly test services: no service starts during apt-get install\nexit 101\n", {
    mode: 0o755,
  });
  try {
    return await install();
  } finally {
    rmSync(policy, { force: true });
  }
}

/** Major version of the `java` on PATH (8 for "1.8.0_x"), or undefined if there is none. */
async function javaMajor(java: string): Promise<number | undefined> {
  const result = await capture(java, ["-version"]);
  const match = /version "(\d+)(?:\.(\d+))?/.exec(result.stderr + result.stdout);
  if (!match) return undefined;
  const major = Number(match[1]);
  return major === 1 ? Number(match[2]) : major;
}

/** A Java 17+ runtime (Kafka 4 needs 17): the one on PATH, else Debian's default JRE. */
export async function ensureJava(log: string, progress: Progress): Promise<string> {
  let java = which("java");
  if (!java || ((await javaMajor(java)) ?? 0) < 17) {
    await aptInstall(["default-jre-headless"], log, progress);
    java = which("java");
  }
  const major = java ? await javaMajor(java) : undefined;
  if (!java || major === undefined || major < 17) {
    throw new Error(`Kafka 4 needs Java 17 or newer; found ${major ?? "none"} (${java ?? "no java on PATH"})`);
  }
  return java;
}

export async function ensureMaven(log: string, progress: Progress): Promise<string> {
  const found = which("mvn");
  if (found) return found;
  await aptInstall(["maven"], log, progress);
  const installed = which("mvn");
  if (!installed) throw new Error("mvn not found after installing Debian's maven package");
  return installed;
}

/** A Go toolchain of at least `minimum` (e.g. "1.24"), else throws. */
export async function ensureGo(minimum: string, log: string, progress: Progress): Promise<string> {
  const goodEnough = async (go: string | undefined) => {
    if (!go) return false;
    const match = /go(\d+)\.(\d+)/.exec((await capture(go, ["version"])).stdout);
    const [wantMajor, wantMinor] = minimum.split(".").map(Number);
    if (!match || wantMajor === undefined || wantMinor === undefined) return false;
    const major = Number(match[1]);
    return major > wantMajor || (major === wantMajor && Number(match[2]) >= wantMinor);
  };
  let go = which("go");
  if (!(await goodEnough(go))) {
    await aptInstall(["golang-go"], log, progress);
    go = which("go");
  }
  if (!go || !(await goodEnough(go))) throw new Error(`needs Go ${minimum} or newer (found ${go ?? "none"})`);
  return go;
}

/** A python3 that can create virtual environments (Debian splits venv into python3-venv). */
export async function ensurePythonVenv(log: string, progress: Progress): Promise<string> {
  const works = async (python: string | undefined) =>
    python !== undefined && (await capture(python, ["-c", "import venv, ensurepip"])).code === 0;
  let python = which("python3");
  if (!(await works(python))) {
    await aptInstall(["python3", "python3-venv"], log, progress);
    python = which("python3");
  }
  if (!python || !(await works(python))) throw new Error("python3 with the venv module is needed for moto");
  return python;
}
