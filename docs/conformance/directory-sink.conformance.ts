// A sink written outside this repository and the module that puts it through the suite:
// `exactly conformance directory-sink.conformance.ts`. test/e2e/install-packages.test.ts
// copies it into a fresh npm project, type-checks it there and runs it that way.
// #region definition
import { appendFile, link, mkdir, readdir, readFile, rm, unlink } from "node:fs/promises";
import { join } from "node:path";
import type { ConformanceDefinition, ConformanceRecord, SinkFactoryContext } from "@exactly/conformance";
import { type Batch, type LingeringContext, type TransactionContext, TwoPhaseCommitSink } from "@exactly/core";

/** One transaction per checkpoint: a hidden file, published by a hard link at commit. */
interface DirectoryTransaction {
  name: string;
}

const ignoreMissingOrDone = (error: NodeJS.ErrnoException) => {
  if (error.code !== "ENOENT" && error.code !== "EEXIST") throw error;
};

class DirectorySink extends TwoPhaseCommitSink<ConformanceRecord, DirectoryTransaction> {
  private readonly dir: string;
  constructor(dir: string) {
    super(); // Node's type stripping refuses constructor parameter properties: assign fields
    this.dir = dir;
  }
  protected async beginTransaction(ctx: TransactionContext): Promise<DirectoryTransaction> {
    await mkdir(this.dir, { recursive: true });
    return { name: `${ctx.sinkId}-${ctx.subtask}-${ctx.checkpointId}` };
  }
  protected async write(txn: DirectoryTransaction, batch: Batch<ConformanceRecord>): Promise<void> {
    await appendFile(join(this.dir, `.${txn.name}`), batch.values.map((r) => `${r.id}\n`).join(""));
  }
  protected async preCommit(): Promise<void> {} // appendFile has written it all
  protected async commit(txn: DirectoryTransaction): Promise<void> {
    // Idempotent: a recommit after a crash finds the link made, or the hidden file still there.
    await link(join(this.dir, `.${txn.name}`), join(this.dir, txn.name)).catch(ignoreMissingOrDone);
    await unlink(join(this.dir, `.${txn.name}`)).catch(ignoreMissingOrDone);
  }
  protected async abort(txn: DirectoryTransaction): Promise<void> {
    await unlink(join(this.dir, `.${txn.name}`)).catch(ignoreMissingOrDone);
  }
  protected override async abortLingering(ctx: LingeringContext<DirectoryTransaction>): Promise<void> {
    const keep = new Set(ctx.referenced.map((t) => `.${t.name}`));
    for (const name of await readdir(this.dir).catch(() => [])) {
      const match = /^\.(.+)-(\d+)-(\d+)$/.exec(name);
      if (match?.[1] === ctx.sinkId && ctx.ownsSubtaskIndex(Number(match[2])) && !keep.has(name)) {
        await unlink(join(this.dir, name)).catch(ignoreMissingOrDone);
      }
    }
  }
}

const out = (dir: string) => join(dir, "out");

/** Called in the job's child process, once per subtask. */
export function createSink({ scope }: SinkFactoryContext) {
  return new DirectorySink(out(scope.dir));
}

/** Read in the test process; the sink itself declares its guarantee, capabilities and lifecycle. */
export const definition: ConformanceDefinition = {
  name: "directory sink",
  sinkModule: new URL(import.meta.url),
  // Every id a reader sees, as often as it sees it: the published files, not the hidden ones.
  async readCommitted(scope) {
    const ids: number[] = [];
    for (const name of await readdir(out(scope.dir)).catch(() => [])) {
      if (name.startsWith(".")) continue;
      for (const line of (await readFile(join(out(scope.dir), name), "utf8")).split("\n")) {
        if (line) ids.push(Number(line));
      }
    }
    return ids;
  },
  // What the sink should have cleaned up: hidden files of transactions no one will commit.
  async probeLingering(scope) {
    return (await readdir(out(scope.dir)).catch(() => [])).filter((name) => name.startsWith("."));
  },
  setup: (scope) => mkdir(out(scope.dir), { recursive: true }).then(() => undefined),
  teardown: (scope) => rm(out(scope.dir), { recursive: true, force: true }),
};
// #endregion definition
