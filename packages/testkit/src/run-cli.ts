// Runs the `exactly` command in the test's own process, as a user types it: runExactly returns
// what it printed to stdout (its progress bar and stderr are silenced), for the demo tests of
// each connector; runMain returns its exit code and everything it printed, for the tests of
// what it refuses.

import { buildProgram, main } from "@exactly/cli";
import { vi } from "vitest";

export interface MainRun {
  readonly code: number | string | null | undefined;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * main() on `args`, as bin/exactly.js calls it, without the server addresses of the environment
 * (a test gives its own). Restores the mocks it made before it returns.
 */
export async function runMain(args: readonly string[]): Promise<MainRun> {
  let stdout = "";
  let stderr = "";
  const out = (chunk: unknown) => {
    stdout += typeof chunk === "string" ? chunk : String(chunk);
    return true;
  };
  const err = (chunk: unknown) => {
    stderr += typeof chunk === "string" ? chunk : String(chunk);
    return true;
  };
  const spies = [
    vi.spyOn(process.stdout, "write").mockImplementation(out),
    vi.spyOn(process.stderr, "write").mockImplementation(err),
    vi.spyOn(console, "log").mockImplementation((...line: unknown[]) => out(`${line.join(" ")}\n`)),
    vi.spyOn(console, "error").mockImplementation((...line: unknown[]) => err(`${line.join(" ")}\n`)),
  ];
  const saved = Object.entries(process.env).filter(([name]) => name.startsWith("EXACTLY_"));
  for (const [name] of saved) delete process.env[name];
  const before = process.exitCode;
  try {
    await main(["node", "exactly", ...args]);
    return { code: process.exitCode, stdout, stderr };
  } finally {
    process.exitCode = before;
    for (const [name, value] of saved) process.env[name] = value;
    for (const spy of spies) spy.mockRestore();
  }
}

export async function runExactly(...args: string[]): Promise<string[]> {
  const printed: string[] = [];
  vi.spyOn(console, "log").mockImplementation((line: unknown) => printed.push(String(line)));
  vi.spyOn(console, "error").mockImplementation(() => {});
  vi.spyOn(process.stderr, "write").mockImplementation(() => true);
  await buildProgram()
    .exitOverride()
    .parseAsync(["node", "exactly", ...args]);
  return printed;
}
