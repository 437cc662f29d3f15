// Step 3 for Postgres: Debian's packages, with a throwaway cluster of our own (not Debian's
// "main" cluster), run as the `postgres` user because the server refuses to run as root, with
// prepared transactions enabled for the two-phase-commit sink and trust auth on loopback only.

import { createHash } from "node:crypto";
import { appendFileSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { aptInstall } from "../core/apt.ts";
import { type DaemonSpec, daemonLauncher, daemonPid, waitUntilHealthy } from "../core/launcher.ts";
import { logFile, pidFile, stateDir } from "../core/paths.ts";
import { capture, type Progress, run, writePid } from "../core/proc.ts";
import type { Launcher, ServiceModule } from "../core/service-module.ts";
import type { PostgresEndpoint } from "./endpoint.ts";

const HOST = "127.0.0.1";
const PORT = 55432;
const DATABASE = "exactly";
const SETTINGS = `# Written by packages/testkit/src/services/postgres/launcher.ts on every start.
listen_addresses = '${HOST}'
port = ${PORT}
# TCP only: Debian's socket dir /var/run/postgresql may not exist, and a socket under a deep
# clone path could exceed the 107-byte limit. pg_ctl -w needs no socket (it reads postmaster.pid).
unix_socket_directories = ''
max_prepared_transactions = 64
max_connections = 200
fsync = on
logging_collector = off
`;

function binDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], "bin");
}

export function requireBinDir(): string {
  const dir = binDir();
  if (!dir) throw new Error("PostgreSQL server binaries not found under /usr/lib/postgresql");
  return dir;
}

const asRoot = process.getuid?.() === 0;

/**
 * The cluster lives in `.services/postgres` unless the `postgres` user cannot reach that
 * directory (a clone under /root, say); then in /var/tmp, under a name derived from the state dir
 * so that each clone still gets a cluster of its own.
 */
const primaryRoot = join(stateDir, "postgres");
const fallbackRoot = join(
  "/var/tmp/exactly-services",
  createHash("sha256").update(stateDir).digest("hex").slice(0, 12),
  "postgres",
);

function clusterRoot(): string {
  if (existsSync(join(fallbackRoot, "data", "PG_VERSION"))) return fallbackRoot;
  return primaryRoot;
}

export function postgresDataDir(): string {
  return join(clusterRoot(), "data");
}

export async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const uid = await capture("id", ["-u", "postgres"]);
  const gid = await capture("id", ["-g", "postgres"]);
  if (uid.code !== 0 || gid.code !== 0) throw new Error("the `postgres` user does not exist");
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Runs a PostgreSQL tool as the `postgres` user (directly when we are not root anyway). */
export async function asPostgres(tool: string, args: string[], progress?: Progress): Promise<void> {
  const command = join(requireBinDir(), tool);
  const log = logFile("postgres");
  // cwd "/" because the postgres user may not be allowed into the caller's directory.
  const options = { log, cwd: "/", progress, heartbeat: `still running ${tool}` };
  if (asRoot) await run("runuser", ["-u", "postgres", "--", command, ...args], options);
  else await run(command, args, options);
}

async function canReach(dir: string): Promise<boolean> {
  if (!asRoot) return true;
  return (await capture("runuser", ["-u", "postgres", "--", "test", "-r", dir, "-a", "-x", dir])).code === 0;
}

async function initCluster(progress: Progress): Promise<void> {
  if (existsSync(join(postgresDataDir(), "PG_VERSION"))) return;
  const owner = asRoot ? await postgresUser() : undefined;
  mkdirSync(primaryRoot, { recursive: true });
  const root = (await canReach(primaryRoot)) ? primaryRoot : fallbackRoot;
  const data = join(root, "data");
  // Parents first with the default mode: a recursive mkdir would give them 0700 too, and the
  // postgres user must be able to traverse them.
  mkdirSync(root, { recursive: true });
  mkdirSync(data, { mode: 0o700 });
  if (owner) chownSync(data, owner.uid, owner.gid);
  progress(`initdb ${data}`);
  await asPostgres("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale"]);
  // Our settings go in a file of their own, rewritten on each start, so changing them here
  // takes effect without a new cluster.
  appendFileSync(join(data, "postgresql.conf"), "\ninclude_if_exists = 'exactly.conf'\n");
}

/** Records the postmaster's pid (first line of postmaster.pid) in our pid file. */
function recordPid(): void {
  const pid = Number.parseInt(readFileSync(join(postgresDataDir(), "postmaster.pid"), "utf8"), 10);
  if (!Number.isInteger(pid)) throw new Error("postmaster.pid has no pid");
  writePid(pidFile("postgres"), pid);
}

async function createDatabase(): Promise<void> {
  const client = new pg.Client({
    host: HOST,
    port: PORT,
    user: "postgres",
    database: "postgres",
    connectionTimeoutMillis: 3_000,
  });
  await client.connect();
  try {
    const exists = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [DATABASE]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE "${DATABASE}"`);
  } finally {
    await client.end();
  }
}

/** The launcher of the PostgreSQL server: its module hands itself over when it loads this file. */
export function postgresLauncher(module: ServiceModule<PostgresEndpoint>): Launcher<PostgresEndpoint> {
  const spec: DaemonSpec<PostgresEndpoint> = {
    module,
    host: HOST,
    ports: [PORT],
    endpoint: () => ({ url: `postgres://postgres@${HOST}:${PORT}/${DATABASE}` }),
    // pg_ctl starts the postmaster as `postgres -D <data dir>`; the data dir makes it ours.
    looksLikeOurs: (cmdline) => cmdline.includes("postgres") && cmdline.includes(postgresDataDir()),
    install: async (progress) => {
      if (!binDir()) await aptInstall(["postgresql"], logFile("postgres"), progress);
      requireBinDir();
      if (asRoot) await postgresUser();
      await initCluster(progress);
    },
    start: async (progress) => {
      const data = postgresDataDir();
      writeFileSync(join(data, "exactly.conf"), SETTINGS);
      // No -l: the server's output goes to pg_ctl's stdout, which is our log (opened by us, so
      // the postgres user needs no write access to .services/logs).
      await asPostgres("pg_ctl", ["start", "-D", data, "-w", "-t", "120"], progress);
      recordPid();
    },
    afterStart: createDatabase,
    readyTimeoutMs: 120_000,
    // SIGINT is PostgreSQL's "fast" shutdown: roll back sessions, checkpoint, exit.
    stopSignal: "SIGINT",
  };

  /**
   * True if `url` points at the server this launcher started and it runs now: the port and a
   * loopback host match and the pid file names a live postmaster of our data dir.
   */
  function owns({ url }: PostgresEndpoint): boolean {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return false;
    }
    const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(parsed.hostname);
    return loopback && Number(parsed.port || 5432) === PORT && daemonPid(spec) !== undefined;
  }

  /**
   * Fast shutdown, then start, which the two-phase-commit smoke test uses to prove that prepared
   * transactions survive a restart.
   */
  async function restart(): Promise<void> {
    if (daemonPid(spec) === undefined) throw new Error("the launcher's PostgreSQL is not running");
    writeFileSync(join(postgresDataDir(), "exactly.conf"), SETTINGS);
    await asPostgres("pg_ctl", ["restart", "-D", postgresDataDir(), "-m", "fast", "-w", "-t", "120"]);
    recordPid();
    await waitUntilHealthy(spec);
  }

  return { ...daemonLauncher(spec), owns, restart };
}
