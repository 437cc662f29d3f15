// The contract every service implements, one module per folder (kafka/, postgres/, redis/, s3/),
// as testcontainers-node has one module per service. Global setup, the CLI and the test helpers
// only iterate over modules (modules.ts); nothing outside a service's folder knows its variables,
// ports or programs.
//
// An endpoint is resolved in the order of docs/design.md §7, one step per member below:
// the environment, else a container, else the local launcher; the launcher waits on the probe.

import type { Progress } from "./proc.ts";

/** Where an endpoint came from, in the order the steps are tried. */
export type ServiceSource = "env" | "container" | "launcher";

// Members are method signatures, not function-typed properties, on purpose: methods compare
// bivariantly, so every ServiceModule<KafkaEndpoint> is also a ServiceModule<unknown> and the
// generic code can hold all four in one list. Each endpoint only ever goes back to the module
// it came from.
export interface ServiceModule<E = unknown, N extends string = string> {
  /** How the CLI, EXACTLY_SERVICES, messages, logs and pid files name the service. */
  readonly name: N;
  /** The variables that give the endpoint, as messages name them. */
  readonly envHint: string;
  /**
   * Step 1: the endpoint the environment gives, or undefined if its main variable is unset. A
   * half-configured service (an S3 endpoint without keys) throws, naming what is missing.
   */
  fromEnv(env: NodeJS.ProcessEnv): E | undefined;
  /** The variables, in order, that make `fromEnv` return this endpoint (`pnpm services env`). */
  toEnv(endpoint: E): Record<string, string>;
  /** A one-line description that is safe to print: passwords and secret keys left out. */
  describe(endpoint: E): string;
  /** Step 2: a throwaway container through testcontainers (loaded only when a runtime answers). */
  startContainer(): Promise<ServiceContainer<E>>;
  /** Step 3: the local launcher, loaded on first use (it brings the install and process code). */
  launcher(): Promise<Launcher<E>>;
  /**
   * The health check `up` waits on and `status` reports: it exercises what the project needs
   * (a committed transaction, prepared transactions...), not just an open port. Resolves with a
   * short fact about the server, rejects with why it is not healthy.
   */
  probe(endpoint: E): Promise<string>;
  /** How a test may restart the server (core/restart.ts); absent where no test needs to. */
  readonly restart?: RestartSpec;
}

export interface RestartSpec {
  /** The server as messages name it ("PostgreSQL"). */
  label: string;
  /** The variable holding a shell command that restarts a server the project does not control. */
  commandVariable: string;
  /** How long the server may take to be healthy again. */
  timeoutMs: number;
}

export interface ServiceContainer<E> {
  endpoint: E;
  containerId: string;
  stop(): Promise<void>;
}

export interface UpResult<E> {
  endpoint: E;
  /** False when a server this launcher had started earlier was already running and reused. */
  started: boolean;
  detail: string;
}

export interface Launcher<E> {
  /** Where this launcher's server listens (fixed loopback ports), whether or not it runs. */
  endpoint(): E;
  /** Pid of the server this launcher started, while it still runs. */
  runningPid(): number | undefined;
  /** Installs what is missing, starts the server unless ours already runs, waits until healthy. */
  up(progress: Progress): Promise<UpResult<E>>;
  /** Stops the server if this launcher started it, and waits until it has exited. */
  down(progress: Progress): Promise<boolean>;
  /** Which server program runs, where a launcher has a choice (S3: "minio" or "moto"). */
  implementation?(): string;
  /** Whether `endpoint` is this launcher's own server and it runs now (so a test may restart it). */
  owns?(endpoint: E): boolean;
  /** Restarts this launcher's server and waits until it is healthy again. */
  restart?(): Promise<void>;
  /**
   * Kills this launcher's server with SIGKILL (a crash), leaves it down `downMs` (an outage;
   * default 0), starts it again on the same data and waits until it is healthy.
   */
  crash?(options?: CrashOptions): Promise<void>;
}

export interface CrashOptions {
  /** How long the server stays down between the SIGKILL and its start. Default 0. */
  readonly downMs?: number;
}
