// `exactly rescale <location> <count>`: declares a rescale in the location's layout record, and
// the current count withdraws it (docs/deploying.md, Rescaling). The processes that then move
// the layout are in test/e2e/shard-rescale.test.ts and packages/core/test/shards.test.ts.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ShardLayout } from "@exactly/core";
import { FileConditionalRecord } from "@exactly/core/internal";
import { runExactly } from "@exactly/testkit/run-cli";
import { afterEach, describe, expect, it, vi } from "vitest";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("exactly rescale", () => {
  it("declares a rescale to the given count in the layout, and withdraws it given the current count", async () => {
    const location = await mkdtemp(join(tmpdir(), "exactly-rescale-"));
    const record = new FileConditionalRecord<ShardLayout>(join(location, "_layout"));
    await record.replace(undefined, { count: 3, generation: 2, minEpoch: 1_700_000_000_000, base: [] });

    expect(await runExactly("rescale", location, "2")).toEqual([
      `${location}: rescale from 3 to 2 shards declared (layout generation 2): stop the 3 shards, then start 2; the first of them moves the layout`,
    ]);
    expect((await record.read())?.value).toMatchObject({ count: 3, generation: 2, next: 2 });

    expect(await runExactly("rescale", location, "3")).toEqual([
      `${location}: the job runs as 3 shards (layout generation 2); no rescale is declared`,
    ]);
    expect((await record.read())?.value.next).toBeUndefined();
  });
});

describe("exactly rescale of a job run as groups", () => {
  it("rescales the group --group names, and refuses without it, naming the groups", async () => {
    const location = await mkdtemp(join(tmpdir(), "exactly-rescale-"));
    const record = new FileConditionalRecord<ShardLayout>(join(location, "group-downstream", "_layout"));
    await record.replace(undefined, { count: 3, generation: 1, minEpoch: 1_700_000_000_000, base: [] });
    await new FileConditionalRecord<ShardLayout>(join(location, "group-upstream", "_layout")).replace(undefined, {
      count: 2,
      generation: 1,
      minEpoch: 1_700_000_000_000,
      base: [],
    });

    await expect(runExactly("rescale", location, "2")).rejects.toThrow(
      /--group: the job at .* runs as the groups downstream, upstream.*name the one to rescale/,
    );
    expect(await runExactly("rescale", location, "2", "--group", "downstream")).toEqual([
      `${join(location, "group-downstream")}: rescale from 3 to 2 shards declared (layout generation 1): stop the 3 shards, then start 2; the first of them moves the layout`,
    ]);
    expect((await record.read())?.value).toMatchObject({ count: 3, next: 2 });
  });
});
