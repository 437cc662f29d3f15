// Step 3 for S3, a local S3-compatible server: MinIO built from its Go module by default (a real
// object store that enforces S3's multipart rules), moto's server mode as the fallback when MinIO
// cannot be built (no Go toolchain new enough, or the build fails). EXACTLY_S3_SERVER=minio|moto
// forces one.
//
// Both listen on the same port, so tests see one S3 endpoint whichever runs; the state dir
// records which one was started. Credentials are random per clone and kept in the state dir.

import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { aptTool } from "../core/apt.ts";
import { crashDaemon, type DaemonSpec, daemonPid, downDaemon, upDaemon } from "../core/launcher.ts";
import { cacheDir, logFile, pidFile, serviceDir } from "../core/paths.ts";
import { appendLog, capture, type Progress, run, spawnDaemon, which } from "../core/proc.ts";
import type { Launcher, ServiceModule, UpResult } from "../core/service-module.ts";
import { errorMessage } from "../core/wait.ts";
import { DEFAULT_S3_REGION, type S3Endpoint } from "./endpoint.ts";

// MinIO publishes no semver tags (its RELEASE.* tags are not Go module versions), so the pin is
// the pseudo-version of its last published commit; it builds with Go 1.24 or newer.
export const MINIO_MODULE = "github.com/minio/minio";
export const MINIO_VERSION = "v0.0.0-20260212201848-7aac2a2c5b7c";
export const MOTO_VERSION = "5.2.5";

export type S3Server = "minio" | "moto";

const HOST = "127.0.0.1";
const PORT = 59000;
const CONSOLE_PORT = 59001;

const minioBin = join(cacheDir, `minio-${MINIO_VERSION}`, "minio");
// Left behind by a failed build so that later runs go straight to moto instead of spending
// minutes on the same failure; EXACTLY_S3_SERVER=minio tries the build again.
const minioBuildFailed = join(cacheDir, `minio-${MINIO_VERSION}`, "build-failed");
const motoVenv = join(cacheDir, `moto-${MOTO_VERSION}`, "venv");

function s3Dir(): string {
  return serviceDir("s3");
}

interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** This clone's credentials, created on first use (MinIO wants a secret of 8+ characters). */
function credentials(): Credentials {
  const file = join(s3Dir(), "credentials.json");
  if (!existsSync(file)) {
    const fresh: Credentials = {
      accessKeyId: `exactly${randomBytes(6).toString("hex")}`,
      secretAccessKey: randomBytes(24).toString("hex"),
    };
    writeFileSync(file, JSON.stringify(fresh), { mode: 0o600 });
  }
  return JSON.parse(readFileSync(file, "utf8")) as Credentials;
}

function endpoint(): S3Endpoint {
  return {
    endpoint: `http://${HOST}:${PORT}`,
    region: DEFAULT_S3_REGION,
    ...credentials(),
    forcePathStyle: true,
  };
}

const serverFile = () => join(s3Dir(), "server");

/** Which server the launcher last started ("minio" when none was). */
export function startedS3Server(): S3Server {
  try {
    return readFileSync(serverFile(), "utf8").trim() === "moto" ? "moto" : "minio";
  } catch {
    return "minio";
  }
}

/** A Go toolchain of at least `minimum` (e.g. "1.24"), else throws. */
async function ensureGo(minimum: string, log: string, progress: Progress): Promise<string> {
  const [wantMajor = 0, wantMinor = 0] = minimum.split(".").map(Number);
  const goodEnough = async (go: string) => {
    const match = /go(\d+)\.(\d+)/.exec((await capture(go, ["version"])).stdout);
    if (!match) return false;
    const major = Number(match[1]);
    return major > wantMajor || (major === wantMajor && Number(match[2]) >= wantMinor);
  };
  const go = await aptTool("go", ["golang-go"], goodEnough, log, progress);
  if (!go) throw new Error(`needs Go ${minimum} or newer (found ${which("go") ?? "none"})`);
  return go;
}

/** A python3 that can create virtual environments (Debian splits venv into python3-venv). */
async function ensurePythonVenv(log: string, progress: Progress): Promise<string> {
  const hasVenv = async (python: string) => (await capture(python, ["-c", "import venv, ensurepip"])).code === 0;
  const python = await aptTool("python3", ["python3", "python3-venv"], hasVenv, log, progress);
  if (!python) throw new Error("python3 with the venv module is needed for moto");
  return python;
}

/**
 * moto's server (what `moto_server` runs) answering one request at a time. moto checks a
 * conditional write's precondition and then makes the write, with no lock between, so on its
 * threaded server two concurrent `If-None-Match: *` creates of one key can both succeed (a CI
 * run saw two winners); S3 and MinIO make each conditional write atomic, which is what the
 * tests compare the sink against. Without threads werkzeug speaks HTTP/1.0, closing each
 * connection after its answer, so an idle client never holds the server.
 */
const SERIAL_MOTO_SERVER = [
  "import os, sys",
  "from werkzeug.serving import run_simple",
  "from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app",
  "os.environ.setdefault('MOTO_PORT', sys.argv[2])",
  "run_simple(sys.argv[1], int(sys.argv[2]), DomainDispatcherApplication(create_backend_app), threaded=False)",
].join("\n");

/**
 * moto's server mode as a daemon of `module` on `port`, state in `dir`. The s3 service falls
 * back to it on its own port; the s3-moto service runs it beside MinIO, as the second S3
 * implementation the sink's tests run against.
 */
export function motoDaemon(options: {
  module: ServiceModule<S3Endpoint>;
  port: number;
  dir: () => string;
  endpoint: () => S3Endpoint;
  onStart?: () => void;
}): DaemonSpec<S3Endpoint> {
  const { module, port, dir } = options;
  return {
    module,
    host: HOST,
    ports: [port],
    endpoint: options.endpoint,
    looksLikeOurs: (cmdline) => cmdline.includes(join(motoVenv, "bin")) && cmdline.includes(String(port)),
    install: async (progress) => {
      const marker = join(motoVenv, "installed");
      if (existsSync(marker)) return;
      const log = logFile(module.name);
      const python = await ensurePythonVenv(log, progress);
      progress(`installing moto[server]==${MOTO_VERSION} into ${motoVenv}`);
      await run(python, ["-m", "venv", "--clear", motoVenv], { log });
      await run(join(motoVenv, "bin", "pip"), ["install", "--quiet", `moto[server]==${MOTO_VERSION}`], {
        log,
        progress,
        heartbeat: "still installing moto",
      });
      writeFileSync(marker, `${new Date().toISOString()}\n`);
    },
    start: async () => {
      spawnDaemon(join(motoVenv, "bin", "python"), ["-c", SERIAL_MOTO_SERVER, HOST, String(port)], {
        log: logFile(module.name),
        pidFile: pidFile(module.name),
        cwd: dir(),
      });
      options.onStart?.();
    },
    readyTimeoutMs: 60_000,
    stopSignal: "SIGTERM",
  };
}

/** The launcher of the S3 server (MinIO, else moto): its module hands itself over when it loads this file. */
export function s3Launcher(module: ServiceModule<S3Endpoint>): Launcher<S3Endpoint> {
  const minio: DaemonSpec<S3Endpoint> = {
    module,
    host: HOST,
    ports: [PORT, CONSOLE_PORT],
    endpoint,
    looksLikeOurs: (cmdline) => cmdline.includes(minioBin) && cmdline.includes(join(s3Dir(), "minio-data")),
    install: async (progress) => {
      if (existsSync(minioBin)) return;
      const log = logFile("s3");
      const go = await ensureGo("1.24", log, progress);
      progress(`building MinIO ${MINIO_VERSION} with go install (takes several minutes on 2 cores)`);
      const gobin = join(cacheDir, `minio-${MINIO_VERSION}`);
      mkdirSync(gobin, { recursive: true });
      try {
        await run(go, ["install", `${MINIO_MODULE}@${MINIO_VERSION}`], {
          log,
          // GOTOOLCHAIN=local: build with the Go we have rather than download another toolchain.
          env: { ...process.env, GOBIN: gobin, GOTOOLCHAIN: "local", CGO_ENABLED: "0" },
          progress,
          heartbeat: "still building MinIO",
        });
        rmSync(minioBuildFailed, { force: true });
      } catch (error) {
        writeFileSync(minioBuildFailed, `${new Date().toISOString()}\n`);
        throw error;
      }
    },
    start: async () => {
      const data = join(s3Dir(), "minio-data");
      mkdirSync(data, { recursive: true });
      const { accessKeyId, secretAccessKey } = credentials();
      spawnDaemon(
        minioBin,
        [
          "server",
          "--address",
          `${HOST}:${PORT}`,
          "--console-address",
          `${HOST}:${CONSOLE_PORT}`,
          "--certs-dir",
          join(s3Dir(), "minio-certs"),
          // Keeps credentials and other sensitive values out of the log.
          "--anonymous",
          data,
        ],
        {
          log: logFile("s3"),
          pidFile: pidFile("s3"),
          cwd: s3Dir(),
          env: {
            ...process.env,
            MINIO_ROOT_USER: accessKeyId,
            MINIO_ROOT_PASSWORD: secretAccessKey,
            MINIO_BROWSER: "off",
            MINIO_UPDATE: "off",
          },
        },
      );
      writeFileSync(serverFile(), "minio\n");
    },
    readyTimeoutMs: 60_000,
    stopSignal: "SIGTERM",
  };

  const moto = motoDaemon({
    module,
    port: PORT,
    dir: s3Dir,
    endpoint,
    onStart: () => writeFileSync(serverFile(), "moto\n"),
  });

  function wanted(): S3Server | undefined {
    const choice = process.env.EXACTLY_S3_SERVER?.trim();
    if (choice === undefined || choice === "") return undefined;
    if (choice === "minio" || choice === "moto") return choice;
    throw new Error(`EXACTLY_S3_SERVER must be "minio" or "moto", not "${choice}"`);
  }

  function runningSpec(): DaemonSpec<S3Endpoint> | undefined {
    if (daemonPid(minio) !== undefined) return minio;
    if (daemonPid(moto) !== undefined) return moto;
    return undefined;
  }

  async function up(progress: Progress): Promise<UpResult<S3Endpoint>> {
    const choice = wanted();
    const running = runningSpec();
    if (running && (choice === undefined || running === (choice === "moto" ? moto : minio))) {
      return withServer(startedS3Server(), await upDaemon(running, progress));
    }
    if (running) {
      progress(`stopping the running ${startedS3Server()} because EXACTLY_S3_SERVER=${choice}`);
      await downDaemon(running, progress);
    }
    if (choice === "moto" || (choice === undefined && existsSync(minioBuildFailed))) {
      return withServer("moto", await upDaemon(moto, progress));
    }
    try {
      return withServer("minio", await upDaemon(minio, progress));
    } catch (error) {
      if (choice === "minio") throw error;
      const reason = errorMessage(error);
      appendLog(logFile("s3"), `MinIO failed (${reason}); falling back to moto`);
      progress(`MinIO failed (${reason}); falling back to moto`);
      return withServer("moto", await upDaemon(moto, progress));
    }
  }

  function withServer(server: S3Server, result: UpResult<S3Endpoint>): UpResult<S3Endpoint> {
    return { ...result, detail: `${server}: ${result.detail}` };
  }

  /** Whether `target` is this launcher's server, running now (so a test may restart or crash it). */
  function owns(target: S3Endpoint): boolean {
    return target.endpoint === endpoint().endpoint && runningSpec() !== undefined;
  }

  function running(): DaemonSpec<S3Endpoint> {
    const spec = runningSpec();
    if (!spec) throw new Error("the launcher's S3 server is not running");
    return spec;
  }

  return {
    endpoint,
    owns,
    // SIGTERM, then start again on the same data directory.
    restart: async () => {
      const spec = running();
      await downDaemon(spec, () => undefined);
      await upDaemon(spec, () => undefined);
    },
    crash: (options) => crashDaemon(running(), options),
    runningPid: () => {
      const running = runningSpec();
      return running && daemonPid(running);
    },
    up,
    implementation: startedS3Server,
    down: async (progress) => {
      const running = runningSpec();
      return running ? downDaemon(running, progress) : false;
    },
  };
}
