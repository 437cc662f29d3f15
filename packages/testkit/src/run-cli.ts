// Runs the `exactly` command in the test's own process, as a user types it, and returns what
// it printed to stdout (its progress bar and stderr are silenced). The demo tests of each
// connector use it.

import { buildProgram } from "@exactly/cli";
import { vi } from "vitest";

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
