import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

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
