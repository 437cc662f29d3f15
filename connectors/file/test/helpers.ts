import { spawn } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

/** Runs a TypeScript fixture in a child Node process (from sources) and reports how it ended. */
export function runFixture(
  script: string,
  env: Record<string, string>,
): Promise<{ code: number | null; signal: string | null; stderr: string }> {
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

/** All files under `dir`, split into visible (committed output) and hidden ones, skipping `.checkpoints`. */
export async function listOutput(dir: string): Promise<{ visible: string[]; hidden: string[] }> {
  const visible: string[] = [];
  const hidden: string[] = [];
  const walk = async (d: string) => {
    for (const entry of await readdir(d, { withFileTypes: true })) {
      if (entry.name === ".checkpoints") continue;
      const path = join(d, entry.name);
      if (entry.isDirectory()) await walk(path);
      else (entry.name.startsWith(".") ? hidden : visible).push(path);
    }
  };
  await walk(dir);
  return { visible, hidden };
}

/** Counts each `id` in the visible output. */
export async function idCounts(files: readonly string[]): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  for (const file of files) {
    for (const line of (await readFile(file, "utf8")).split("\n")) {
      if (!line) continue;
      const { id } = JSON.parse(line) as { id: number };
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
  }
  return counts;
}
