import { spawn } from "node:child_process";

export interface FixtureRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
}

/**
 * Runs a TypeScript fixture in a child Node process, from the sources (the
 * `@exactly/source` condition), and reports how it ended: crash tests expect SIGKILL.
 */
export function runFixture(script: string, env: Record<string, string>): Promise<FixtureRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--conditions=@exactly/source", "--disable-warning=ExperimentalWarning", script],
      {
        env: { ...process.env, ...env },
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("exit", (code, signal) => resolve({ code, signal, stderr }));
  });
}
