import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sinkContext } from "@exactly/testkit/sink-context";
import {
  type Batch,
  FileSystemCheckpointStorage,
  type Logger,
  type SinkCapabilities,
  type SinkContext,
  SinkFence,
  type TransactionContext,
  TwoPhaseCommitSink,
  writeEachRecord,
} from "../src/index.ts";

export async function tempDir(prefix = "exactly-test-"): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/** An external "system" in memory: committed rows and open transactions, with a call log. */
export class MemoryStore {
  readonly committed: unknown[] = [];
  readonly open = new Map<string, unknown[]>();
  readonly prepared = new Map<string, unknown[]>();
  readonly committedIds = new Set<string>();
  /** Each sink subtask's fence (`<sink>-<index>` to epoch), in a sharded job. */
  readonly fences = new Map<string, number>();
  readonly log: string[] = [];
}

export interface MemoryTxn {
  readonly id: string;
}

/** A correct two-phase-commit sink over {@link MemoryStore}, for runtime tests; fenced when sharded. */
export class MemorySink<T> extends TwoPhaseCommitSink<T, MemoryTxn> {
  override readonly capabilities: SinkCapabilities = { rescale: true, abortsLingering: true, fences: true };
  readonly store: MemoryStore;

  constructor(store: MemoryStore, options: { transactionTimeoutMs?: number } = {}) {
    super(options);
    this.store = store;
  }

  /** Each call runs to its end without yielding: the check and the write are one step, as in one transaction. */
  private get fence(): SinkFence {
    const { sinkId } = this.context;
    return new SinkFence(this.context, {
      read: (index) => this.store.fences.get(`${sinkId}-${index}`),
      write: (index, epoch) => this.store.fences.set(`${sinkId}-${index}`, epoch),
    });
  }

  protected override raiseFences(): void {
    this.fence.raise();
  }

  protected beginTransaction(ctx: TransactionContext): MemoryTxn {
    this.fence.check();
    const id = `${ctx.sinkId}-${ctx.subtask}-${ctx.checkpointId}`;
    this.store.open.set(id, []);
    this.store.log.push(`begin ${id}`);
    return { id };
  }

  /** Per record, as a simple sink does: tests override `writeRecord` to fail on one record. */
  protected write(txn: MemoryTxn, batch: Batch<T>): void | Promise<void> {
    return writeEachRecord(batch, (record) => this.writeRecord(txn, record));
  }

  protected writeRecord(txn: MemoryTxn, record: T): void | Promise<void> {
    this.fence.check();
    const rows = this.store.open.get(txn.id);
    if (!rows) throw new Error(`transaction ${txn.id} is not open`);
    rows.push(record);
  }

  protected async preCommit(txn: MemoryTxn): Promise<void> {
    this.fence.check();
    const rows = this.store.open.get(txn.id) ?? [];
    this.store.open.delete(txn.id);
    this.store.prepared.set(txn.id, rows);
    this.store.log.push(`precommit ${txn.id}`);
  }

  protected async commit(txn: MemoryTxn): Promise<void> {
    this.fence.check();
    if (this.store.committedIds.has(txn.id)) return;
    const rows = this.store.prepared.get(txn.id);
    if (!rows) throw new Error(`transaction ${txn.id} is not prepared`);
    this.store.prepared.delete(txn.id);
    this.store.committed.push(...rows);
    this.store.committedIds.add(txn.id);
    this.store.log.push(`commit ${txn.id}`);
  }

  protected async abort(txn: MemoryTxn): Promise<void> {
    this.store.open.delete(txn.id);
    this.store.prepared.delete(txn.id);
    this.store.log.push(`abort ${txn.id}`);
  }
}

/** A logger that keeps what it was told, for assertions. */
export function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, info: () => {}, warn: (m) => warnings.push(m), error: (m) => warnings.push(m) };
}

/**
 * The test kit's sink context for driving a sink's hooks directly, with checkpoint storage in
 * a fresh temporary directory, a logger that keeps warnings and a 60 s checkpoint timeout.
 */
export async function sinkContextOnDisk(overrides: Partial<SinkContext> = {}): Promise<SinkContext> {
  return sinkContext("s", {
    storage: new FileSystemCheckpointStorage(await tempDir()),
    logger: recordingLogger(),
    checkpointTiming: { intervalMs: 1000, timeoutMs: 60_000, restartDelayMs: 10_000 },
    ...overrides,
  });
}

export function batchOf<T>(values: T[], source = "test"): Batch<T> {
  return { values, positions: values.map((_, i) => ({ source, split: "0", offset: i })), timestamps: undefined };
}
