/**
 * Parsers of flag values, the one place a flag's value is checked: commander reports what they
 * refuse as a usage error (one line, exit code 2, see main.ts), before the command runs.
 * Every numeric flag of every command goes through {@link integerAtLeast}, {@link integerBetween},
 * {@link integer}, {@link seconds} or {@link port}, so each refuses a bad value the same way.
 */
import { accessSync, constants, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { InvalidArgumentError } from "commander";

/** Strict number syntax: `Number("")` and `Number(" ")` are 0, and `1e3` or `0x10` are not what a user types for a count. */
function numberOf(value: string): number {
  return /^-?\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : Number.NaN;
}

/** Any integer (a seed). */
export function integer(value: string): number {
  const n = numberOf(value);
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError(`not an integer: ${value}`);
  return n;
}

/**
 * A parser of integers ≥ `min`: `--records` (1), `--kills` (0), `--workers` (1). Every count
 * and size flag takes one, so a negative, zero or fractional value is refused alike.
 */
export function integerAtLeast(min: number): (value: string) => number {
  return (value: string) => {
    const n = numberOf(value);
    if (!Number.isSafeInteger(n)) throw new InvalidArgumentError(`not an integer: ${value}`);
    if (n < min) throw new InvalidArgumentError(`must be ≥ ${min}, got ${value}`);
    return n;
  };
}

/**
 * A parser of integers from `min` to `max`, for a count with a limit of its own: the demo's
 * `--parallelism` (its job's key groups) and `--records` (its 32-bit progress counter).
 */
export function integerBetween(min: number, max: number): (value: string) => number {
  return (value: string) => {
    const n = numberOf(value);
    if (!Number.isSafeInteger(n)) throw new InvalidArgumentError(`not an integer: ${value}`);
    if (n < min || n > max) throw new InvalidArgumentError(`must be ${min} to ${max}, got ${value}`);
    return n;
  };
}

export function logFormat(value: string): "text" | "json" {
  if (value !== "text" && value !== "json") throw new InvalidArgumentError(`expected text or json, got ${value}`);
  return value;
}

export function seconds(value: string): number {
  const n = numberOf(value);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError(`not a number of seconds ≥ 0: ${value}`);
  return n;
}

/** A duration that must pass: more than 0 seconds. */
export function positiveSeconds(value: string): number {
  const n = numberOf(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`not a number of seconds > 0: ${value}`);
  return n;
}

/** A comma-separated list of stage uids (`--allow-non-restored-state`), none empty. */
export function uidList(value: string): string[] {
  const uids = value.split(",").map((uid) => uid.trim());
  if (uids.some((uid) => uid === "")) throw new InvalidArgumentError(`an empty uid in ${JSON.stringify(value)}`);
  return uids;
}

export function port(value: string): number {
  const n = numberOf(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError(`not a port (0 to 65535): ${value}`);
  return n;
}

/** A path to a file that exists (a job module, a conformance definition). */
export function existingFile(value: string): string {
  const found = statSync(value, { throwIfNoEntry: false });
  if (!found) throw new InvalidArgumentError(`no such file: ${value}`);
  if (!found.isFile()) throw new InvalidArgumentError(`not a file: ${value}`);
  return value;
}

/** A path to a directory that exists: a tool that only reads must not take a mistyped path for an empty place. */
export function existingDirectory(value: string): string {
  const found = statSync(value, { throwIfNoEntry: false });
  if (!found) throw new InvalidArgumentError(`no such directory: ${value}`);
  if (!found.isDirectory()) throw new InvalidArgumentError(`not a directory: ${value}`);
  return value;
}

/**
 * A file a command writes when it ends (a report): its directory must exist and be writable,
 * and the path must not be a directory, so a long run is not lost to a typo in its last step.
 * `-` is stdout.
 */
export function writableFile(value: string): string {
  if (value === "-") return value;
  const path = resolve(value);
  const found = statSync(path, { throwIfNoEntry: false });
  if (found?.isDirectory()) throw new InvalidArgumentError(`a directory, not a file: ${value}`);
  const dir = dirname(path);
  const parent = statSync(dir, { throwIfNoEntry: false });
  if (!parent) throw new InvalidArgumentError(`no such directory: ${dir}`);
  if (!parent.isDirectory()) throw new InvalidArgumentError(`not a directory: ${dir}`);
  try {
    accessSync(found ? path : dir, constants.W_OK);
  } catch {
    throw new InvalidArgumentError(`not writable: ${found ? path : dir}`);
  }
  return value;
}
