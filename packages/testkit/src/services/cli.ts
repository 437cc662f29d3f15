// `pnpm services <command> [service...]`: local test services on Debian.
//
//   up      install what is missing, start (or reuse) and wait until healthy
//   status  each service: healthy, unhealthy or not running; exit 1 unless all are healthy
//   env     `export EXACTLY_...=...` lines for the running services, for `eval "$(...)"`
//   down    stop what `up` started (by pid file) and wait until it has exited
//
// Services: those of modules.ts (all when none is named). Exit 0 when the command did what it
// says for every service, 1 when it did not for some, 2 for a usage error.

import { envLines } from "./core/env.ts";
import { loadLauncher } from "./core/launcher.ts";
import { ensureBaseDirs, logFile } from "./core/paths.ts";
import type { Launcher, ServiceModule } from "./core/service-module.ts";
import { errorMessage, withTimeout } from "./core/wait.ts";
import { SERVICES, serviceNamed } from "./modules.ts";

// kafkajs 2.2.4 (the probe's client) schedules a timer with a negative delay when nothing is
// throttled; Node 24 warns and runs it after 1 ms, which is what kafkajs means. Other warnings
// are still printed.
process.removeAllListeners("warning");
process.on("warning", (warning) => {
  if (warning.name !== "TimeoutNegativeWarning") console.warn(warning);
});

const USAGE = `usage: node packages/testkit/src/services/cli.ts up|down|status|env [${SERVICES.map((m) => m.name).join("|")} ...]`;
const started = Date.now();

/** A service named on the command line, with its launcher. */
interface Selected {
  module: ServiceModule;
  launcher: Launcher<unknown>;
}

function say(service: string, message: string): void {
  const seconds = Math.round((Date.now() - started) / 1000);
  console.log(`[${service} +${seconds}s] ${message}`);
}

async function up(services: Selected[]): Promise<boolean> {
  ensureBaseDirs();
  // In parallel: the installs are mostly waiting on downloads and builds, and apt-get calls
  // queue behind each other inside core/apt.ts.
  const results = await Promise.allSettled(
    services.map(async ({ module, launcher }) => {
      say(module.name, "up");
      const result = await launcher.up((message) => say(module.name, message));
      say(module.name, `healthy at ${module.describe(result.endpoint)} (${result.detail})`);
    }),
  );
  let ok = true;
  results.forEach((result, i) => {
    const { name } = (services[i] as Selected).module;
    if (result.status === "rejected") {
      ok = false;
      say(name, `FAILED: ${errorMessage(result.reason)}`);
      say(name, `log: ${logFile(name)}`);
    }
  });
  console.log(ok ? `all up in ${Math.round((Date.now() - started) / 1000)} s` : "some services failed");
  return ok;
}

async function status(services: Selected[]): Promise<boolean> {
  let ok = true;
  for (const { module, launcher } of services) {
    const pid = launcher.runningPid();
    const program = launcher.implementation ? ` (${launcher.implementation()})` : "";
    const where = `${module.describe(launcher.endpoint())}${program}`;
    const name = module.name.padEnd(9);
    if (pid === undefined) {
      ok = false;
      console.log(`${name} not running  ${where}`);
      continue;
    }
    try {
      const detail = await withTimeout(module.probe(launcher.endpoint()), 30_000, "health check");
      console.log(`${name} healthy      ${where}  pid ${pid}  ${detail}`);
    } catch (error) {
      ok = false;
      console.log(`${name} UNHEALTHY    ${where}  pid ${pid}  ${errorMessage(error)}`);
    }
  }
  return ok;
}

function env(services: Selected[]): boolean {
  let ok = true;
  for (const { module, launcher } of services) {
    if (launcher.runningPid() === undefined) {
      ok = false;
      console.error(`# ${module.name} is not running: run \`pnpm services up ${module.name}\` first`);
      continue;
    }
    for (const line of envLines(module, launcher.endpoint())) console.log(line);
  }
  return ok;
}

async function down(services: Selected[]): Promise<boolean> {
  const results = await Promise.allSettled(
    services.map(async ({ module, launcher }) => {
      const stopped = await launcher.down((message) => say(module.name, message));
      say(module.name, stopped ? "stopped" : "was not running");
    }),
  );
  let ok = true;
  results.forEach((result, i) => {
    if (result.status === "rejected") {
      ok = false;
      say((services[i] as Selected).module.name, `FAILED to stop: ${errorMessage(result.reason)}`);
    }
  });
  return ok;
}

const COMMANDS: Record<string, (services: Selected[]) => boolean | Promise<boolean>> = { up, status, env, down };

async function main(argv: string[]): Promise<number> {
  const [command, ...names] = argv;
  const unknown = names.filter((name) => !serviceNamed(name));
  if (command === undefined || unknown.length > 0) {
    console.error(unknown.length > 0 ? `unknown service: ${unknown.join(", ")}\n${USAGE}` : USAGE);
    return 2;
  }
  const run = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (!run) {
    console.error(`unknown command: ${command}\n${USAGE}`);
    return 2;
  }
  const modules = names.length > 0 ? names.map((name) => serviceNamed(name) as ServiceModule) : SERVICES;
  const services = await Promise.all(modules.map(async (module) => ({ module, launcher: await loadLauncher(module) })));
  return (await run(services)) ? 0 : 1;
}

// The clients' sockets may keep the event loop alive a little; exit as soon as we are done.
process.exit(await main(process.argv.slice(2)));
