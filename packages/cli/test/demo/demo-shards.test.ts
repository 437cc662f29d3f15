// `exactly demo --shards 3`: the demo job as three shard processes, SIGKILLed and restarted,
// one shard paused past its lease while a replacement takes it and then resumed, and the job
// rescaled from 3 to 2 shards; the committed output is checked as for every demo.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runExactly } from "@exactly/testkit/run-cli";
import { afterEach, describe, expect, it, vi } from "vitest";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("exactly demo --shards", () => {
  it("ends exactly once with every kill delivered, the paused shard fenced once resumed, and a rescale from 3 to 2; inspect shows each shard", async () => {
    const out = await mkdtemp(join(tmpdir(), "exactly-demo-shards-"));
    const printed = await runExactly(
      "demo",
      "--out",
      out,
      "--shards",
      "3",
      "--records",
      "200000",
      "--kills",
      "2",
      "--seed",
      "7",
      "--json",
    );
    const summary = JSON.parse(printed.at(-1) as string);
    expect(summary).toMatchObject({
      ok: true,
      committed: 200_000,
      lost: 0,
      duplicated: 0,
      keysWithBadSequence: 0,
      kills: 2,
      shards: 3,
      rescaledTo: 2,
      zombie: { resumed: true, fenced: true },
    });
    // The recoveries (restarts after a kill or a failure) hold those from a checkpoint. The first
    // shards, the zombie's replacement and the rescaled layout restore checkpoints too, but they
    // recover from nothing: counted among those from a checkpoint, the row would not add up.
    expect(summary.restoredFromCheckpoint).toBeLessThanOrEqual(summary.recoveries);
    expect(printed[0]).toMatch(
      new RegExp(
        `^recoveries +${summary.recoveries} \\(${summary.restoredFromCheckpoint} from a checkpoint, ${
          summary.recoveries - summary.restoredFromCheckpoint
        } from the beginning\\)$`,
        "m",
      ),
    );

    const inspected = JSON.parse((await runExactly("inspect", join(out, ".checkpoints"), "--json")).join("\n")) as {
      layout: { count: number; generation: number; minEpoch: number };
      shards: Array<{
        shard: number;
        lease: { released: boolean };
        checkpoints: Array<{ final: boolean; committed: boolean }>;
      }>;
    };
    expect(inspected.layout).toEqual({ count: 2, generation: 2, minEpoch: expect.any(Number) });
    expect(inspected.shards.map((s) => s.shard)).toEqual([0, 1, 2]);
    // The two shards of the last layout ended gracefully: a final checkpoint, committed, the lease released.
    for (const shard of inspected.shards.slice(0, 2)) {
      expect(shard.lease.released).toBe(true);
      expect(shard.checkpoints.at(-1)).toMatchObject({ final: true, committed: true });
    }
    // In text, an epoch is the generation and the count since it began, not 13 bare digits.
    const text = (await runExactly("inspect", join(out, ".checkpoints"))).join("\n");
    expect(text).toContain(
      `epochs: g2+k is the k-th after generation 2 began at ${new Date(inspected.layout.minEpoch).toISOString()}`,
    );
    expect(text).toMatch(/^shard 0: lease released by \S+ \(epoch g2\+\d+\); head at epoch g2\+\d+/m);
    // Shard 2 is not in the last layout: its epochs are from before generation 2.
    expect(text).toMatch(/^shard 2 \(not in the current layout[^\n]*lease released by \S+ \(epoch g2-\d+\)/m);
    expect(text).not.toMatch(/^shard \d.*\d{13}/m);
  });
});
