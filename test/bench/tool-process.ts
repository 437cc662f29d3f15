/**
 * A reference tool's process (a server's benchmark tool, a job on another runtime), run under
 * GNU time so that its CPU seconds and peak RSS are its own, as each case's are.
 */
import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";

export interface ToolRun {
  /** What it printed, stdout then stderr. */
  readonly output: string;
  /** Wall time from spawn to exit. */
  readonly seconds: number;
  readonly cpuSeconds: number;
  readonly peakRssMb: number;
}

const TIME_PREFIX = "BENCH_TOOL_TIME";

/** Runs `command` under `/usr/bin/time`; rejects with the end of its output if it fails. */
export function runTool(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<ToolRun> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn("/usr/bin/time", ["-f", `${TIME_PREFIX} %U %S %M`, command, ...args], { env });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => {
      stdout += c;
    });
    child.stderr.on("data", (c) => {
      stderr += c;
    });
    child.on("error", (error) => reject(new Error(`${command} (under /usr/bin/time) did not start: ${error.message}`)));
    // "close", not "exit": the process may exit before its output is read to the end, and GNU
    // time's line comes last.
    child.on("close", (code) => {
      const seconds = (performance.now() - started) / 1000;
      const timing = stderr.split("\n").find((l) => l.startsWith(TIME_PREFIX));
      if (code !== 0 || !timing) {
        const tail = (stdout + stderr).trim().split("\n").slice(-5).join(" | ");
        reject(new Error(`${command} ended with code ${code}: ${tail}`));
        return;
      }
      const [user, system, maxKb] = timing.slice(TIME_PREFIX.length).trim().split(" ").map(Number) as [
        number,
        number,
        number,
      ];
      resolve({ output: stdout + stderr, seconds, cpuSeconds: user + system, peakRssMb: Math.round(maxKb / 1024) });
    });
  });
}
