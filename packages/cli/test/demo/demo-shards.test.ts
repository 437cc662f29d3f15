// `exactly demo --shards 3`: the demo job as three shard processes, SIGKILLed and restarted,
// one shard paused past its lease while a replacement takes it and then resumed, and the job
// rescaled from 3 to 2 shards; the committed output is checked as for every demo.
import { runExactly } from "@exactly/testkit/run-cli";
import { afterEach, describe, expect, it, vi } from "vitest";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("exactly demo --shards", () => {
  it("ends exactly once with every kill delivered, the paused shard fenced once resumed, and a rescale from 3 to 2", async () => {
    const printed = await runExactly(
      "demo",
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
  });
});
