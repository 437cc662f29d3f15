// `pnpm services <command> [service...]`: local test services on Debian.
//
//   up      install what is missing, start (or reuse) and wait until healthy
//   status  each service: healthy, unhealthy or not running; exit 1 unless all are healthy
//   env     `export EXACTLY_...=...` lines for the running services, for `eval "$(...)"`
//   down    stop what `up` started (by pid file) and wait until it has exited
//
// Services: kafka, postgres, redis, s3 (all when none is named).

import { ensureBaseDirs, logFile } from "./core/paths.ts";
import { errorMessage, withTimeout } from "./core/wait.ts";
import { launchers } from "./launchers.ts";
import { probe } from "./probes.ts";
import { describeEndpoint, envLines, isServiceName, SERVICE_NAMES, type ServiceName } from "./service-env.ts";

// kafkajs 2.2.4 (the probe's client) schedules a timer with a negative delay when nothing is
// throttled; Node 24 warns and runs it after 1 ms, which is what kafkajs means. Other warnings
// are still printed.
process.removeAllListeners("warning");
process.on("warning", (warning) => {
  if (warning.name !== "TimeoutNegativeWarning") console.warn(warning);
});

const USAGE = "usage: node test/services/cli.ts up|down|status|env [kafka|postgres|redis|s3 ...]";
const started = Date.now();

function say(service: ServiceName, message: string): void {
  const seconds = Math.round((Date.now() - started) / 1000);
  console.log(`[${service} +${seconds}s] ${message}`);
}

async function up(services: ServiceName[]): Promise<boolean> {
  ensureBaseDirs();
  // In parallel: the installs are mostly waiting on downloads and builds, and apt-get calls
  // queue behind each other inside core/apt.ts.
  const results = await Promise.allSettled(
    services.map(async (service) => {
      say(service, "up");
      const result = await launchers[service].up((message) => say(service, message));
      say(service, `healthy at ${describeEndpoint(service, result.endpoint)} (${result.detail})`);
      return result;
    }),
  );
  let ok = true;
  results.forEach((result, i) => {
    const service = services[i] as ServiceName;
    if (result.status === "rejected") {
      ok = false;
      say(service, `FAILED: ${errorMessage(result.reason)}`);
      say(service, `log: ${logFile(service)}`);
    }
  });
  console.log(ok ? `all up in ${Math.round((Date.now() - started) / 1000)} s` : "some services failed");
  return ok;
}

async function status(services: ServiceName[]): Promise<boolean> {
  let ok = true;
  for (const service of services) {
    const launcher = launchers[service];
    const pid = launcher.runningPid();
    const program = launcher.implementation ? ` (${launcher.implementation()})` : "";
    const where = `${describeEndpoint(service, launcher.endpoint())}${program}`;
    if (pid === undefined) {
      ok = false;
      console.log(`${service.padEnd(9)} not running  ${where}`);
      continue;
    }
    try {
      const detail = await withTimeout(probe(service, launcher.endpoint()), 30_000, "health check");
      console.log(`${service.padEnd(9)} healthy      ${where}  pid ${pid}  ${detail}`);
    } catch (error) {
      ok = false;
      console.log(`${service.padEnd(9)} UNHEALTHY    ${where}  pid ${pid}  ${errorMessage(error)}`);
    }
  }
  return ok;
}

function env(services: ServiceName[]): boolean {
  let ok = true;
  for (const service of services) {
    const launcher = launchers[service];
    if (launcher.runningPid() === undefined) {
      ok = false;
      console.error(`# ${service} is not running: run \`pnpm services up ${service}\` first`);
      continue;
    }
    for (const line of envLines(service, launcher.endpoint())) console.log(line);
  }
  return ok;
}

async function down(services: ServiceName[]): Promise<boolean> {
  const results = await Promise.allSettled(
    services.map(async (service) => {
      const stopped = await launchers[service].down((message) => say(service, message));
      say(service, stopped ? "stopped" : "was not running");
    }),
  );
  let ok = true;
  results.forEach((result, i) => {
    if (result.status === "rejected") {
      ok = false;
      say(services[i] as ServiceName, `FAILED to stop: ${errorMessage(result.reason)}`);
    }
  });
  return ok;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...names] = argv;
  const unknown = names.filter((name) => !isServiceName(name));
  if (command === undefined || unknown.length > 0) {
    console.error(unknown.length > 0 ? `unknown service: ${unknown.join(", ")}\n${USAGE}` : USAGE);
    return 2;
  }
  const services = names.length > 0 ? (names as ServiceName[]) : [...SERVICE_NAMES];
  switch (command) {
    case "up":
      return (await up(services)) ? 0 : 1;
    case "status":
      return (await status(services)) ? 0 : 1;
    case "env":
      return env(services) ? 0 : 1;
    case "down":
      return (await down(services)) ? 0 : 1;
    default:
      console.error(`unknown command: ${command}\n${USAGE}`);
      return 2;
  }
}

// The clients' sockets may keep the event loop alive a little; exit as soon as we are done.
process.exit(await main(process.argv.slice(2)));
