/**
 * The demo's `--out` directory: what it holds decides whether a run starts fresh, resumes, or
 * refuses. A demo process killed whole (its worker and itself, as a host crash or an OOM kill
 * ends them) leaves its checkpoints there; started again with the same settings, the demo
 * resumes from the latest complete one and checks the whole history. Files that are not a
 * demo's of these settings are never written over.
 */

import { mkdir, mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ConfigurationError } from "@exactly/core";

/** Marks a directory as a demo's own; a dot file, so the output check does not read it. */
export const DEMO_MARKER = ".exactly-demo.json";

/** The settings a resumed run must share with the run it resumes: they decide what the output must be. */
export interface DemoIdentity {
  readonly records: number;
  readonly parallelism: number;
  readonly guarantee: string;
  /** Present only when not the default, "exactly-once". */
  readonly checkpointing?: string;
  readonly keys: number;
  readonly sink: string;
  readonly table?: string;
  readonly pgSink?: string;
  readonly keyPrefix?: string;
  readonly bucket?: string;
  readonly prefix?: string;
  readonly checkpoints?: string;
}

export interface PreparedOut {
  readonly dir: string;
  /** The directory held a run of the same settings, which this one continues. */
  readonly resumed: boolean;
}

/** The marker of `out`, if it holds one: read before the targets are built, so a resumed run finds its S3 prefix. */
export async function previousDemo(out: string | undefined): Promise<DemoIdentity | undefined> {
  if (!out) return undefined;
  try {
    return JSON.parse(await readFile(join(resolve(out), DEMO_MARKER), "utf8")) as DemoIdentity;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    if (code === "ENOTDIR") throw notADirectory(resolve(out));
    throw new ConfigurationError(
      "--out",
      `${resolve(out)}: ${DEMO_MARKER} is unreadable: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
}

/**
 * A new temp directory without `out`; an empty or new `out`, marked; or an `out` that a demo
 * of the same settings marked, resumed. Anything else is refused, naming what differs.
 */
export async function prepareOut(out: string | undefined, identity: DemoIdentity): Promise<PreparedOut> {
  const dir = out ? resolve(out) : await mkdtemp(join(tmpdir(), "exactly-demo-"));
  try {
    await mkdir(dir, { recursive: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // EEXIST: a file is there; ENOTDIR: a file is on the way to it.
    if (code === "EEXIST" || code === "ENOTDIR") throw notADirectory(dir);
    throw new ConfigurationError("--out", `${dir} cannot be made: ${(error as Error).message}`, { cause: error });
  }
  const entries = await readdir(dir);
  if (entries.length === 0) {
    await writeFile(join(dir, DEMO_MARKER), `${JSON.stringify(identity)}\n`);
    return { dir, resumed: false };
  }
  const previous = await previousDemo(dir);
  if (!previous) {
    throw new ConfigurationError(
      "--out",
      `${dir} is not empty and holds no demo run (no ${DEMO_MARKER}): the demo checks everything in it, so give it an empty or new directory`,
    );
  }
  const differ = differences(previous, identity);
  if (differ.length > 0) {
    throw new ConfigurationError(
      "--out",
      `${dir} holds a demo run with other settings (${differ.join("; ")}): resume it with the same settings, or give a new directory`,
    );
  }
  return { dir, resumed: true };
}

function notADirectory(dir: string): ConfigurationError {
  return new ConfigurationError("--out", `${dir} is a file, not a directory: give an empty or new directory`);
}

function differences(previous: DemoIdentity, now: DemoIdentity): string[] {
  const keys = new Set([...Object.keys(previous), ...Object.keys(now)]) as Set<keyof DemoIdentity>;
  const out: string[] = [];
  for (const key of keys) {
    if (previous[key] !== now[key]) {
      out.push(`${key}: ${JSON.stringify(previous[key])} before, ${JSON.stringify(now[key])} now`);
    }
  }
  return out;
}
