import { lstat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { ConfigurationError, type LingeringWork, type LingeringWorkFinder, type StateReferences } from "@exactly/core";
import { transactionsInState } from "@exactly/core/internal";
import { requireSafePrefix } from "../bucket-assigner.ts";
import { LocalRecoverableWriter } from "./local-recoverable-writer.ts";

export interface LocalLingeringOptions {
  /** The sink's base directory (`localFileSink`'s `directory`). */
  readonly directory: string;
  /** The sink's `partPrefix`; by default the sink's own, `part-<sinkName>`. */
  readonly partPrefix?: string;
  /** The sink's name in the job, which names its parts when no `partPrefix` was set. */
  readonly sinkName?: string;
}

/**
 * The in-progress part files one exactly-once local file sink left in its directory, found
 * from outside the job. They hold no lock and block no reader, but nothing removes them but
 * the sink's own recovery: a job that never restarts leaves them, hidden, for good. A
 * checkpoint references a part by its bucket and name, which is also how one is found here;
 * aborting removes the in-progress file.
 */
export class LocalLingeringParts implements LingeringWorkFinder {
  readonly description: string;
  private readonly writer: LocalRecoverableWriter;
  private readonly prefix: string;

  constructor(options: LocalLingeringOptions) {
    if (!options.directory) throw new ConfigurationError("directory", "is required: the sink's directory");
    if (options.partPrefix === undefined && !options.sinkName) {
      throw new ConfigurationError("sinkName", "give the sink's name, or its partPrefix");
    }
    this.prefix = requireSafePrefix(options.partPrefix ?? `part-${options.sinkName}`);
    const directory = resolve(options.directory);
    this.writer = new LocalRecoverableWriter(directory);
    this.description = `in-progress part files ${this.prefix}-* under ${directory}`;
  }

  async list(): Promise<LingeringWork[]> {
    const found: LingeringWork[] = [];
    for await (const { bucket, name, path } of this.writer.inProgressParts(`${this.prefix}-`)) {
      const info = await lstat(path).catch(() => undefined);
      // Gone since it was listed: committed or aborted meanwhile.
      if (!info) continue;
      found.push({ id: path, reference: join(bucket, name), startedAt: info.mtimeMs, detail: `${info.size} B` });
    }
    return found;
  }

  referencesIn(sinkState: unknown): StateReferences {
    const { pending, open } = transactionsInState(sinkState);
    const partsOf = (txns: unknown[]) =>
      txns.flatMap((t) => {
        const parts = (t as { parts?: unknown }).parts;
        if (!Array.isArray(parts)) return [];
        return parts.flatMap((p) => {
          const { bucket, name } = (p ?? {}) as { bucket?: unknown; name?: unknown };
          return typeof bucket === "string" && typeof name === "string" ? [join(bucket, name)] : [];
        });
      });
    return { pending: partsOf(pending), open: partsOf(open) };
  }

  async abort(work: LingeringWork): Promise<void> {
    const [bucket, name] = splitReference(work.reference);
    await this.writer.abort({ bucket, name });
  }

  async close(): Promise<void> {}
}

/** A reference back into (bucket, part name); a part name holds no separator. */
function splitReference(reference: string): [string, string] {
  const at = reference.lastIndexOf("/");
  return at < 0 ? ["", reference] : [reference.slice(0, at), reference.slice(at + 1)];
}
