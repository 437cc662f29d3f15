/** Parsers of flag values: commander reports what they refuse as a usage error (exit code 2). */
import { InvalidArgumentError } from "commander";

export function integer(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new InvalidArgumentError(`not an integer: ${value}`);
  return n;
}

export function logFormat(value: string): "text" | "json" {
  if (value !== "text" && value !== "json") throw new InvalidArgumentError(`expected text or json, got ${value}`);
  return value;
}

export function seconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError(`not a number of seconds: ${value}`);
  return n;
}

export function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError(`not a port: ${value}`);
  return n;
}
