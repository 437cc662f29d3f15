import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { idCounts } from "@exactly/testkit/ids";

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

/** Each `id` in the JSON lines of `files`. */
export async function idCountsInFiles(files: readonly string[]): Promise<Map<number, number>> {
  const lines = await Promise.all(files.map(async (file) => (await readFile(file, "utf8")).split("\n")));
  return idCounts(lines.flat());
}
