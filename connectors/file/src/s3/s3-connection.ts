/**
 * How the S3 writer and checkpoint storage reach a server, what its errors mean, and where
 * their keys may go. This folder is the only place that touches the AWS SDK.
 */
import { S3Client, type S3ClientConfig, S3ServiceException } from "@aws-sdk/client-s3";
import { ConfigurationError, isTransientByDefault } from "@exactly/core";

/**
 * The server and who we are to it. Unset fields come from the SDK's defaults: the region
 * and credentials from its provider chain (environment, shared config, instance role).
 * Credentials are handed to the SDK and never logged.
 */
export interface S3ConnectionOptions {
  /** An S3-compatible server's URL, e.g. "http://127.0.0.1:9000". Default: AWS. */
  readonly endpoint?: string;
  readonly region?: string;
  readonly credentials?: {
    readonly accessKeyId: string;
    readonly secretAccessKey: string;
    readonly sessionToken?: string;
  };
  /** Buckets by path (`endpoint/bucket/key`), as most S3-compatible servers want. */
  readonly forcePathStyle?: boolean;
  /** Attempts per request inside the SDK (its own retry with backoff). Default 3. */
  readonly maxAttempts?: number;
}

/** A client for one sink subtask or one storage: created where it is used, never shared across threads. */
export function createS3Client(options: S3ConnectionOptions = {}): S3Client {
  const config: S3ClientConfig = {
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    // The SDK insists on a region; S3-compatible servers accept any.
    region: options.region ?? process.env.AWS_REGION ?? (options.endpoint ? "us-east-1" : undefined),
    ...(options.credentials === undefined ? {} : { credentials: { ...options.credentials } }),
    ...(options.forcePathStyle === undefined ? {} : { forcePathStyle: options.forcePathStyle }),
    maxAttempts: options.maxAttempts ?? 3,
  };
  return new S3Client(config);
}

/** `s3://bucket/prefix` → its parts; the prefix is checked as {@link requireSafeKeyPrefix} does. */
export function parseS3Url(url: string, setting = "checkpoint location"): { bucket: string; prefix: string } {
  const match = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(url);
  if (!match?.[1]) throw new ConfigurationError(setting, `expected s3://bucket/prefix, got ${JSON.stringify(url)}`);
  return { bucket: match[1], prefix: requireSafeKeyPrefix(match[2] ?? "", setting) };
}

/**
 * A key prefix every key of a sink or storage starts with: '' (the whole bucket) or
 * segments joined by '/', none empty, none '.' or '..', no leading '/'. A trailing '/' is
 * dropped. Anything else could make two configurations share keys, or climb out of the
 * prefix in tools that treat keys as paths.
 */
export function requireSafeKeyPrefix(prefix: string, setting = "prefix"): string {
  if (typeof prefix !== "string") throw new ConfigurationError(setting, "must be a string");
  const trimmed = prefix.endsWith("/") ? prefix.slice(0, -1) : prefix;
  if (trimmed === "") return "";
  if (trimmed.startsWith("/"))
    throw new ConfigurationError(setting, `must not start with '/', got ${JSON.stringify(prefix)}`);
  if (trimmed.includes("\0") || trimmed.includes("\\")) {
    throw new ConfigurationError(setting, `must not contain NUL or '\\', got ${JSON.stringify(prefix)}`);
  }
  for (const segment of trimmed.split("/")) {
    if (segment === "" || segment === "." || segment === "..") {
      throw new ConfigurationError(setting, `has an empty, '.' or '..' segment: ${JSON.stringify(prefix)}`);
    }
  }
  return trimmed;
}

/** `prefix/rest`, or `rest` for the whole bucket. */
export function joinKey(prefix: string, ...rest: string[]): string {
  return [prefix, ...rest].filter((s) => s !== "").join("/");
}

/** The S3 error name (`NoSuchUpload`, `NotFound`, `PreconditionFailed` …) or undefined. */
export function s3ErrorName(error: unknown): string | undefined {
  if (error instanceof S3ServiceException) return error.name;
  const name = (error as { name?: unknown } | undefined)?.name;
  return typeof name === "string" ? name : undefined;
}

export function httpStatus(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
}

export function isNotFound(error: unknown): boolean {
  const name = s3ErrorName(error);
  return name === "NotFound" || name === "NoSuchKey" || httpStatus(error) === 404;
}

export function isPreconditionFailed(error: unknown): boolean {
  return s3ErrorName(error) === "PreconditionFailed" || httpStatus(error) === 412;
}

/** A server that does not implement a header we sent (e.g. If-None-Match on an older emulator). */
export function isNotImplemented(error: unknown): boolean {
  return s3ErrorName(error) === "NotImplemented" || httpStatus(error) === 501;
}

/** Answers that say the server does not accept who we are (or what we may do): never worth a retry. */
const REFUSED_CREDENTIALS = new Set([
  "InvalidAccessKeyId",
  "SignatureDoesNotMatch",
  "InvalidToken",
  "ExpiredToken",
  "TokenRefreshRequired",
  "AccessDenied",
]);

/** The server refused our credentials (403 InvalidAccessKeyId, SignatureDoesNotMatch …, or a bare 403). */
export function isRefusedCredentials(error: unknown): boolean {
  const name = s3ErrorName(error);
  if (name !== undefined && REFUSED_CREDENTIALS.has(name)) return true;
  // A 403 can also be a clock too far off (RequestTimeTooSkewed), which passes.
  return httpStatus(error) === 403 && !isTransientS3Error(error);
}

export function isNoSuchBucket(error: unknown): boolean {
  return s3ErrorName(error) === "NoSuchBucket";
}

const TRANSIENT_NAMES = new Set([
  "InternalError",
  "ServiceUnavailable",
  "SlowDown",
  "RequestTimeout",
  "RequestTimeTooSkewed",
  "TimeoutError",
  "ThrottlingException",
]);

/**
 * Worth retrying: the server is busy, restarting or unreachable. The SDK has already
 * retried these maxAttempts times; the sink's commit retry and the job's restart go on.
 */
export function isTransientS3Error(error: unknown): boolean {
  if (isTransientByDefault(error)) return true;
  const name = s3ErrorName(error);
  if (name !== undefined && TRANSIENT_NAMES.has(name)) return true;
  const status = httpStatus(error);
  if (status !== undefined && (status >= 500 || status === 429)) return !isNotImplemented(error);
  // The SDK's network failures carry the Node error code on the error or its cause.
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  return cause !== undefined && cause !== error && isTransientByDefault(cause);
}
