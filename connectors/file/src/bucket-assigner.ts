import { isAbsolute, normalize, sep } from "node:path";
import { ConfigurationError, ExactlyError } from "@exactly/core";

/** Chooses the bucket (a sub-directory of the base, '' for the base) a record goes to. */
export type BucketAssigner<T> = (record: T) => string;

/** Every record in the base directory. */
export const basePathBucketAssigner = (): BucketAssigner<unknown> => () => "";

/** A path from a bucket assigner that would leave the base directory, or is otherwise unsafe. */
export class UnsafeBucketPathError extends ExactlyError {
  readonly bucket: string;
  constructor(bucket: string, reason: string) {
    super("UNSAFE_BUCKET_PATH", `bucket path ${JSON.stringify(bucket)} rejected: ${reason}`);
    this.bucket = bucket;
  }
}

/**
 * Checks a bucket path and returns it normalized ('' for the base). Paths never escape the
 * base: absolute paths, '..' segments and NUL bytes are rejected, and so are segments that
 * start with '.', which readers treat as hidden (our in-progress files are hidden).
 */
export function validateBucket(bucket: string): string {
  if (typeof bucket !== "string") throw new UnsafeBucketPathError(String(bucket), "not a string");
  if (bucket === "" || bucket === ".") return "";
  if (bucket.includes("\0")) throw new UnsafeBucketPathError(bucket, "contains a NUL byte");
  if (isAbsolute(bucket) || /^[a-zA-Z]:/.test(bucket)) throw new UnsafeBucketPathError(bucket, "is absolute");
  const normalized = normalize(bucket).replace(/[\\/]+$/, "");
  const segments = normalized.split(/[\\/]/);
  if (segments.some((s) => s === "..")) throw new UnsafeBucketPathError(bucket, "leaves the base directory");
  if (segments.some((s) => s.startsWith("."))) throw new UnsafeBucketPathError(bucket, "has a hidden segment");
  return segments.join(sep);
}

export function requireSafePrefix(prefix: string): string {
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(prefix)) {
    throw new ConfigurationError(
      "partPrefix",
      `must be letters, digits, '_', '.', '-' and not start with '.', got ${JSON.stringify(prefix)}`,
    );
  }
  return prefix;
}
