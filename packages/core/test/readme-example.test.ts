import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import {
  ArraySource,
  type LingeringContext,
  StreamJob,
  silentLogger,
  type TransactionContext,
  TwoPhaseCommitSink,
} from "../src/index.ts";
import { tempDir } from "./helpers.ts";

interface Entry {
  readonly account: string;
  readonly amount: number;
}

/** An in-memory stand-in for an external transactional system, for the README example. */
class Ledger {
  readonly rows: Entry[] = [];
  private readonly open = new Map<string, { entries: Entry[]; prepared: boolean }>();
  private readonly done = new Set<string>();
  async begin(id: string) {
    this.open.set(id, { entries: [], prepared: false });
  }
  append(id: string, entry: Entry) {
    this.open.get(id)?.entries.push(entry);
  }
  async prepare(id: string) {
    const txn = this.open.get(id);
    if (txn) txn.prepared = true;
  }
  async commit(id: string) {
    if (this.done.has(id)) return;
    this.rows.push(...(this.open.get(id)?.entries ?? []));
    this.open.delete(id);
    this.done.add(id);
  }
  async rollback(id: string) {
    this.open.delete(id);
  }
  async openTransactions(prefix: string) {
    return [...this.open.keys()].filter((id) => id.startsWith(prefix));
  }
}

// #region readme-sink
class LedgerSink extends TwoPhaseCommitSink<Entry, { id: string }> {
  private readonly ledger: Ledger;
  constructor(ledger: Ledger) {
    super({ transactionTimeoutMs: 15 * 60_000 });
    this.ledger = ledger;
  }
  protected async beginTransaction(ctx: TransactionContext) {
    const id = `${ctx.sinkId}-${ctx.subtask}-${ctx.checkpointId}`; // deterministic: recovery finds it
    await this.ledger.begin(id);
    return { id };
  }
  protected write(txn: { id: string }, entry: Entry) {
    this.ledger.append(txn.id, entry);
  }
  protected preCommit(txn: { id: string }) {
    return this.ledger.prepare(txn.id); // durable, not yet visible
  }
  protected commit(txn: { id: string }) {
    return this.ledger.commit(txn.id); // must be idempotent
  }
  protected abort(txn: { id: string }) {
    return this.ledger.rollback(txn.id);
  }
  protected override async abortLingering(ctx: LingeringContext<{ id: string }>) {
    for (const id of await this.ledger.openTransactions(`${ctx.sinkId}-`)) {
      if (!ctx.referenced.some((t) => t.id === id)) await this.ledger.rollback(id);
    }
  }
}
// #endregion readme-sink

describe("README example", () => {
  it("is the code in README.md, and it works", async () => {
    const readme = await readFile(new URL("../../../README.md", import.meta.url), "utf8");
    const self = await readFile(new URL(import.meta.url), "utf8");
    const region = /\/\/ #region readme-sink\n([\s\S]*?)\/\/ #endregion readme-sink/.exec(self)?.[1]?.trim();
    expect(region).toBeDefined();
    expect(readme).toContain(region as string);

    const ledger = new Ledger();
    const entries = Array.from({ length: 500 }, (_, i) => ({ account: `a${i % 5}`, amount: i }));
    const job = new StreamJob({
      name: "readme",
      checkpoint: { storage: await tempDir(), intervalMs: 10 },
      logger: silentLogger,
    });
    job.fromSource(new ArraySource(entries)).sinkTo(() => new LedgerSink(ledger), { name: "ledger" });
    await job.execute();
    expect(ledger.rows).toEqual(entries);
    expect(await ledger.openTransactions("")).toEqual([]);
  });
});
