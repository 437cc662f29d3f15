// `exactly lingering kafka` against the real broker, on a job SIGKILLed (at an armed fault
// point) and never restarted: its open transactions stay Ongoing until the 120 s transaction
// timeout, and every read_committed reader of their partitions stops at them, records
// committed after them included. Killed after its checkpoint became durable, the job's
// checkpoint holds them pre-committed: the tool spares them when given --checkpoints and
// aborts them without. Killed right after pre-commit, before the checkpoint, no checkpoint
// will commit them (the last one holds them as open) and --abort ends them with
// --checkpoints given. Either way the reader moves on.

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { LingeringJson } from "@exactly/testkit/cli-output";
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { uniqueName } from "@exactly/testkit/ids";
import { runExactly } from "@exactly/testkit/run-cli";
import { runFixture } from "@exactly/testkit/run-fixture";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createTopic, newKafka, partitionEnds, readCommitted } from "./helpers.ts";

const job = fileURLToPath(new URL("./fixtures/crash-job.ts", import.meta.url));
const PARTITIONS = 2;

async function lingering(...args: string[]): Promise<{ report: LingeringJson; exitCode: unknown }> {
  process.exitCode = undefined;
  const printed = await runExactly("lingering", "kafka", "--brokers", kafkaBrokers().join(","), "--json", ...args);
  const exitCode = process.exitCode;
  process.exitCode = undefined;
  vi.restoreAllMocks();
  return { report: JSON.parse(printed.join("\n")) as LingeringJson, exitCode };
}

/**
 * Runs the job until the armed fault point SIGKILLs it, after some checkpoints have
 * committed output; writes a record to each partition outside any transaction afterwards.
 */
async function killedJob(fault: string) {
  const kafka = newKafka(kafkaBrokers());
  const topic = uniqueName("lingering");
  const prefix = uniqueName("lingering");
  const checkpoints = await mkdtemp(join(tmpdir(), "exactly-lingering-kafka-"));
  await createTopic(kafka, topic, PARTITIONS);
  const run = await runFixture(job, {
    CRASH_BROKERS: kafkaBrokers().join(","),
    CRASH_TOPIC: topic,
    CRASH_PREFIX: prefix,
    CRASH_CHECKPOINTS: checkpoints,
    CRASH_RECORDS: String(100_000_000),
    CRASH_RATE: "5000",
    EXACTLY_FAULT: fault,
  });
  expect(run.signal, run.stderr.slice(-2000)).toBe("SIGKILL");
  expect((await readCommitted(topic, PARTITIONS, { settle: false })).length).toBeGreaterThan(0);

  // Committed, yet invisible to a read_committed reader while the killed job's transactions stay open.
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({
    topic,
    messages: Array.from({ length: PARTITIONS }, (_, partition) => ({ partition, value: `after-kill-${partition}` })),
  });
  await producer.disconnect();
  const stuck = (await partitionEnds(topic, PARTITIONS)).filter(
    (e) => BigInt(e.lastStableOffset ?? e.highWatermark) < BigInt(e.highWatermark),
  );
  expect(stuck.length, "some partition's last stable offset is held back").toBeGreaterThan(0);
  const visible = await readCommitted(topic, PARTITIONS, { settle: false });
  for (const end of stuck) expect(visible).not.toContain(`after-kill-${end.partition}`);
  return { kafka, topic, prefix, checkpoints, stuck };
}

/** Every record is readable again, the one written after the kill included, and nothing is open. */
async function readersMoveOn(topic: string) {
  const values = await readCommitted(topic, PARTITIONS);
  for (let partition = 0; partition < PARTITIONS; partition++) expect(values).toContain(`after-kill-${partition}`);
  for (const end of await partitionEnds(topic, PARTITIONS)) {
    expect(end.lastStableOffset, `partition ${end.partition}`).toBe(end.highWatermark);
  }
}

describe("exactly lingering kafka", () => {
  afterEach(() => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
  });

  it("a job killed after its checkpoint: spares what the checkpoint pre-committed, then without --checkpoints aborts it and readers move on", async () => {
    const { topic, prefix, checkpoints, stuck } = await killedJob("after-checkpoint-durable@20");

    const listed = await lingering("--prefix", prefix, "--checkpoints", checkpoints);
    expect(listed.exitCode, "work is left open").toBe(1);
    expect(listed.report.checkpointsRead).toBeGreaterThan(0);
    expect(listed.report.items.length).toBeGreaterThan(0);
    for (const item of listed.report.items) {
      expect(item.id.startsWith(`${prefix}-`)).toBe(true);
      expect(item.status, "no sink was told to commit: each is the checkpoint's").toBe("pre-committed");
      expect(item.ageSeconds).not.toBeNull();
      expect(item.ageSeconds as number).toBeLessThan(300);
    }
    const holdsBack = listed.report.items.map((i) => i.detail).join("; ");
    for (const end of stuck) expect(holdsBack).toContain(`${topic}:${end.partition}`);
    // Another prefix's transactions are not this sink's.
    expect((await lingering("--prefix", `${prefix}-0`)).report.items).toEqual([]);
    // No terminal to confirm on (stdin is not a TTY here): --abort without --yes refuses.
    await expect(lingering("--prefix", prefix, "--abort")).rejects.toThrow("--yes");

    // With the checkpoints, --abort spares them all.
    const spared = await lingering("--prefix", prefix, "--checkpoints", checkpoints, "--abort", "--yes");
    expect(spared.exitCode).toBe(1);
    expect(spared.report.items.some((i) => i.aborted)).toBe(false);
    expect((await lingering("--prefix", prefix)).report.items.map((i) => i.id)).toEqual(
      listed.report.items.map((i) => i.id),
    );

    // Without them, --abort refuses; --abort-without-checkpoints spares nothing: every open
    // transaction is aborted, and readers move on.
    await expect(lingering("--prefix", prefix, "--abort", "--yes")).rejects.toThrow("--checkpoints");
    const all = await lingering("--prefix", prefix, "--abort-without-checkpoints", "--yes");
    expect(all.exitCode, "nothing is left open").toBe(0);
    expect(all.report.items.map((i) => [i.id, i.aborted])).toEqual(listed.report.items.map((i) => [i.id, true]));
    expect((await lingering("--prefix", prefix)).report.items).toEqual([]);
    await readersMoveOn(topic);
  });

  it("a job killed right after pre-commit: no checkpoint will commit its transaction, and --abort ends it", async () => {
    const { topic, prefix, checkpoints } = await killedJob("after-pre-commit@20");

    // The transaction pre-committed at the kill began after the last checkpoint's barrier: that
    // checkpoint holds it as open, and a restart from it would abort it.
    const listed = await lingering("--prefix", prefix, "--checkpoints", checkpoints);
    const open = listed.report.items.filter((i) => i.status === "open-at-checkpoint");
    expect(open.length, "the transaction pre-committed at the kill").toBeGreaterThan(0);
    for (const item of open) expect(item.checkpointIds.length).toBeGreaterThan(0);

    const aborted = await lingering("--prefix", prefix, "--checkpoints", checkpoints, "--abort", "--yes");
    expect(aborted.report.items.filter((i) => i.aborted).map((i) => i.id)).toEqual(
      listed.report.items.filter((i) => i.status !== "pre-committed").map((i) => i.id),
    );
    // What a checkpoint pre-committed (the other subtask's, if its barrier came first) is left; then all of it.
    await lingering("--prefix", prefix, "--abort-without-checkpoints", "--yes");
    expect((await lingering("--prefix", prefix)).report.items).toEqual([]);
    await readersMoveOn(topic);
  });
});
