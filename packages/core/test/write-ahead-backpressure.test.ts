// A write-ahead sink sends a completed checkpoint's log while the next one is logged. When
// sending is the slower, the sink holds its writer back, so the source slows to the sending's
// pace instead of the logs (and the commit latency) growing for as long as the load lasts; and
// it is held back only by completed checkpoints, so a declined checkpoint, whose log completes
// only after the writer's next snapshot, never deadlocks it.

import { describe, expect, it } from "vitest";
import {
  type CheckpointCommitter,
  GeneratorSource,
  GenericWriteAheadSink,
  type LoggedRecords,
  type Logger,
  StreamJob,
  silentLogger,
} from "../src/index.ts";
import { tempDir } from "./helpers.ts";

const HOLDING = "holding the source back";

/** What the sinks of one job share: the rows sent, the checkpoints marked, and gates on sending. */
class Target {
  readonly rows: number[] = [];
  readonly marks = new Set<string>();
  /** Records every subtask's writer logged so far. */
  logged = 0;
  private readonly closedFor: (checkpointId: number) => boolean;
  private readonly sendMs: number;
  private open = false;
  private openGate: () => void = () => {};
  private readonly gate = new Promise<void>((resolve) => {
    this.openGate = resolve;
  });

  /**
   * Sending waits at the gate (of the checkpoints `closedFor` picks) until it opens, and
   * takes `sendMs` more for every checkpoint.
   */
  constructor(closedFor: (checkpointId: number) => boolean, sendMs = 0) {
    this.closedFor = closedFor;
    this.sendMs = sendMs;
  }

  async pass(checkpointId: number): Promise<void> {
    if (this.sendMs > 0) await new Promise((resolve) => setTimeout(resolve, this.sendMs));
    if (this.open || !this.closedFor(checkpointId)) return;
    await this.gate;
  }

  release(): void {
    this.open = true;
    this.openGate();
  }
}

/** A checkpoint's rows and its mark land together, as a sink whose marker lives beside its data. */
class GatedWriteAheadSink extends GenericWriteAheadSink<number> {
  private readonly target: Target;
  private readonly slowSnapshot: ((checkpointId: number) => Promise<void>) | undefined;

  constructor(target: Target, slowSnapshot?: (checkpointId: number) => Promise<void>) {
    const committer: CheckpointCommitter = {
      isCommitted: async (sinkId, subtask, checkpointId) => target.marks.has(`${sinkId}/${subtask}/${checkpointId}`),
      commit: async () => {},
    };
    super({ committer });
    this.target = target;
    this.slowSnapshot = slowSnapshot;
  }

  override async writeBatch(batch: Parameters<GenericWriteAheadSink<number>["writeBatch"]>[0]): Promise<void> {
    await super.writeBatch(batch);
    this.target.logged += batch.values.length;
  }

  override async snapshotState(checkpointId: number) {
    await this.slowSnapshot?.(checkpointId);
    return super.snapshotState(checkpointId);
  }

  protected async sendValues(): Promise<void> {
    throw new Error("sendAndCommit does both");
  }

  protected override async sendAndCommit(
    records: LoggedRecords<number>,
    checkpointId: number,
    subtask: number,
  ): Promise<void> {
    await this.target.pass(checkpointId);
    const rows: number[] = [];
    for await (const batch of records) for (const row of batch) rows.push(row);
    for (const row of rows) this.target.rows.push(row);
    this.target.marks.add(`${this.context.sinkId}/${subtask}/${checkpointId}`);
  }
}

function infoLogger(): Logger & { infos: string[] } {
  const infos: string[] = [];
  return { infos, info: (m) => infos.push(m), warn: () => {}, error: () => {} };
}

async function waitFor(what: string, check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const everyRecordOnce = (records: number) => Array.from({ length: records }, (_, i) => i);

describe("a write-ahead sink whose sending is slow", () => {
  it("I6: holds the source back while completed checkpoints wait to be sent, and loses or repeats nothing", async () => {
    const RECORDS = 200_000;
    const batchSize = 100;
    const channelCapacity = 4;
    const target = new Target(() => true);
    const logger = infoLogger();
    let declined = 0;
    const job = new StreamJob({
      name: "wal-backpressure",
      checkpoint: { storage: await tempDir(), intervalMs: 20, timeoutMs: 300 },
      batchSize,
      channelCapacity,
      logger,
    });
    let read = 0;
    job
      .fromSource(
        new GeneratorSource({
          count: RECORDS,
          // Paced only so that checkpoints complete before the last record is logged.
          ratePerSecond: 200_000,
          generate: (i) => {
            read++;
            return i;
          },
        }),
      )
      .sinkTo(() => new GatedWriteAheadSink(target), { name: "wal" });
    const result = job.execute({ onDeclined: () => declined++ });

    // The first completed checkpoint's sending waits at the gate: the writer must stop.
    await waitFor("the writer held back", () => logger.infos.some((m) => m.includes(HOLDING)));
    const logged = target.logged;
    // Held back for as long as the gate is closed: checkpoints meanwhile cannot pass the writer.
    const declinedBefore = declined;
    await waitFor("a checkpoint declined while the writer is held", () => declined > declinedBefore);
    expect(target.logged).toBe(logged);
    expect(logged).toBeLessThan(RECORDS);
    // The source read only what the writer took and what the channel holds.
    expect(read - logged).toBeLessThanOrEqual((channelCapacity + 2) * batchSize);

    target.release();
    await result;
    expect(target.rows.sort((a, b) => a - b)).toEqual(everyRecordOnce(RECORDS));
  });

  it("I6: a checkpoint declined while sending is slow does not deadlock the writer, on two subtasks of one loop", async () => {
    const RECORDS = 100_000;
    // Every checkpoint takes a while to send, so the writer is held back by the rate measured.
    const target = new Target(() => false, 30);
    let committed = 0;
    let chosen: number | undefined;
    let declineChosen: () => void = () => {};
    const chosenDeclined = new Promise<void>((resolve) => {
      declineChosen = resolve;
    });
    // The first snapshot after a commit waits until its checkpoint is declined: its log stays
    // pending, to complete with the next checkpoint, which needs this writer's next snapshot.
    // A writer held back by it would never get there.
    const slowSnapshot = async (checkpointId: number) => {
      if (chosen === undefined && committed > 0) chosen = checkpointId;
      if (checkpointId === chosen) await chosenDeclined;
    };
    const job = new StreamJob({
      name: "wal-declined-then-slow",
      parallelism: 2,
      checkpoint: { storage: await tempDir(), intervalMs: 20, timeoutMs: 300 },
      batchSize: 100,
      logger: silentLogger,
    });
    job
      .fromSource(new GeneratorSource({ count: RECORDS, splits: 2, ratePerSecond: 100_000, generate: (i) => i }))
      .sinkTo(() => new GatedWriteAheadSink(target, slowSnapshot), { name: "wal" });
    await job.execute({
      onCommitted: () => committed++,
      onDeclined: (id) => {
        if (id === chosen) declineChosen();
      },
    });
    expect(chosen).toBeDefined();
    expect(target.rows.sort((a, b) => a - b)).toEqual(everyRecordOnce(RECORDS));
  });
});
