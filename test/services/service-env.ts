// The four services, what an endpoint of each looks like, and how endpoints travel through
// environment variables (`pnpm services env` prints them, CI evals them, global setup reads them).

export type ServiceName = "kafka" | "postgres" | "redis" | "s3";
export const SERVICE_NAMES: readonly ServiceName[] = ["kafka", "postgres", "redis", "s3"];

export interface KafkaEndpoint {
  brokers: string[];
}
export interface PostgresEndpoint {
  url: string;
}
export interface RedisEndpoint {
  url: string;
}
export interface S3Endpoint {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Always true here: local S3 servers serve buckets by path, not by virtual host. */
  forcePathStyle: boolean;
}

export interface Endpoints {
  kafka: KafkaEndpoint;
  postgres: PostgresEndpoint;
  redis: RedisEndpoint;
  s3: S3Endpoint;
}

export const ENV = {
  kafkaBrokers: "EXACTLY_KAFKA_BROKERS",
  pgUrl: "EXACTLY_PG_URL",
  redisUrl: "EXACTLY_REDIS_URL",
  s3Endpoint: "EXACTLY_S3_ENDPOINT",
  s3AccessKey: "EXACTLY_S3_ACCESS_KEY",
  s3SecretKey: "EXACTLY_S3_SECRET_KEY",
  s3Region: "EXACTLY_S3_REGION",
} as const;

export const DEFAULT_S3_REGION = "us-east-1";

/** The variables that give each service's endpoint, as messages name them. */
export const ENV_HINT: { [S in ServiceName]: string } = {
  kafka: ENV.kafkaBrokers,
  postgres: ENV.pgUrl,
  redis: ENV.redisUrl,
  s3: `${ENV.s3Endpoint} (+ ${ENV.s3AccessKey}, ${ENV.s3SecretKey})`,
};

export function isServiceName(name: string): name is ServiceName {
  return (SERVICE_NAMES as readonly string[]).includes(name);
}

type Env = NodeJS.ProcessEnv;

function envValue(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === "" ? undefined : value;
}

const parsers: { [S in ServiceName]: (env: Env) => Endpoints[S] | undefined } = {
  kafka: (env) => {
    const brokers = envValue(env, ENV.kafkaBrokers);
    if (brokers === undefined) return undefined;
    return {
      brokers: brokers
        .split(",")
        .map((b) => b.trim())
        .filter((b) => b !== ""),
    };
  },
  postgres: (env) => {
    const url = envValue(env, ENV.pgUrl);
    return url === undefined ? undefined : { url };
  },
  redis: (env) => {
    const url = envValue(env, ENV.redisUrl);
    return url === undefined ? undefined : { url };
  },
  s3: (env) => {
    const endpoint = envValue(env, ENV.s3Endpoint);
    if (endpoint === undefined) return undefined;
    const accessKeyId = envValue(env, ENV.s3AccessKey);
    const secretAccessKey = envValue(env, ENV.s3SecretKey);
    if (accessKeyId === undefined || secretAccessKey === undefined) {
      const missing = [accessKeyId ? undefined : ENV.s3AccessKey, secretAccessKey ? undefined : ENV.s3SecretKey];
      throw new Error(`${ENV.s3Endpoint} is set but ${missing.filter(Boolean).join(" and ")} is not`);
    }
    const region = envValue(env, ENV.s3Region) ?? DEFAULT_S3_REGION;
    return { endpoint, region, accessKeyId, secretAccessKey, forcePathStyle: true };
  },
};

/**
 * The endpoint given by environment variables, or undefined if the service's main variable is
 * unset. A half-configured service (S3 endpoint without keys) is an error naming what is missing.
 */
export function endpointFromEnv<S extends ServiceName>(service: S, env: Env = process.env): Endpoints[S] | undefined {
  return parsers[service](env);
}

const line = (name: string, value: string) => `export ${name}=${shellQuote(value)}`;

const formatters: { [S in ServiceName]: (endpoint: Endpoints[S]) => string[] } = {
  kafka: (e) => [line(ENV.kafkaBrokers, e.brokers.join(","))],
  postgres: (e) => [line(ENV.pgUrl, e.url)],
  redis: (e) => [line(ENV.redisUrl, e.url)],
  s3: (e) => [
    line(ENV.s3Endpoint, e.endpoint),
    line(ENV.s3AccessKey, e.accessKeyId),
    line(ENV.s3SecretKey, e.secretAccessKey),
    line(ENV.s3Region, e.region),
  ],
};

/** `export NAME=value` lines that make `endpointFromEnv` return this endpoint. */
export function envLines<S extends ServiceName>(service: S, endpoint: Endpoints[S]): string[] {
  return formatters[service](endpoint);
}

const describers: { [S in ServiceName]: (endpoint: Endpoints[S]) => string } = {
  kafka: (e) => e.brokers.join(","),
  postgres: (e) => redactUrl(e.url),
  redis: (e) => redactUrl(e.url),
  s3: (e) => e.endpoint,
};

/** A one-line description that is safe to print: passwords and secret keys left out. */
export function describeEndpoint<S extends ServiceName>(service: S, endpoint: Endpoints[S]): string {
  return describers[service](endpoint);
}

export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "<unparseable URL>";
  }
}

function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}
