// The local file sink's lingering finder: it lists the in-progress parts of one sink (its
// prefix, every bucket) and nothing else, reads the parts a checkpointed state references
// as the sink writes them, and aborting removes exactly the one in-progress file.

import { mkdtemp, readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigurationError } from "@exactly/core";
import { describe, expect, it } from "vitest";
import { LocalLingeringParts } from "../src/index.ts";
import { LocalRecoverableWriter } from "../src/local/local-recoverable-writer.ts";

async function inProgress(writer: LocalRecoverableWriter, bucket: string, name: string): Promise<void> {
  const part = await writer.openPart({ bucket, name });
  await part.append("x\n");
  await part.closeForCommit();
}

describe("LocalLingeringParts", () => {
  it("lists one sink's in-progress parts in every bucket, spares the state's references, and aborts one", async () => {
    const base = await mkdtemp(join(tmpdir(), "exactly-local-lingering-"));
    const writer = new LocalRecoverableWriter(base);
    await inProgress(writer, "", "part-out-0-1-0-aaa");
    await inProgress(writer, "day=1", "part-out-1-2-0-bbb");
    await inProgress(writer, "", "part-other-0-1-0-ccc");
    await writeFile(join(base, "part-out-0-1-1-ddd"), "published\n");

    const finder = new LocalLingeringParts({ directory: base, sinkName: "out" });
    const listed = await finder.list();
    expect(listed.map((w) => w.reference).sort()).toEqual(["day=1/part-out-1-2-0-bbb", "part-out-0-1-0-aaa"]);

    const state = {
      pending: [{ checkpointId: 1, txn: { id: 1, parts: [{ bucket: "", name: "part-out-0-1-0-aaa", length: 2 }] } }],
      current: { txn: { id: 2, parts: [] } },
    };
    expect(finder.referencesIn(state)).toEqual({ pending: ["part-out-0-1-0-aaa"], open: [] });
    expect(finder.referencesIn({ unrelated: true })).toEqual({ pending: [], open: [] });

    await finder.abort(listed.find((w) => w.reference.startsWith("day=1/")) as (typeof listed)[number]);
    expect((await finder.list()).map((w) => w.reference)).toEqual(["part-out-0-1-0-aaa"]);
    expect(await readdir(join(base, "day=1"))).toEqual([]);
    expect((await readdir(base)).sort()).toEqual([
      ".part-other-0-1-0-ccc.inprogress",
      ".part-out-0-1-0-aaa.inprogress",
      "day=1",
      "part-out-0-1-1-ddd",
    ]);
    await finder.close();
  });

  it("needs the sink's name or its part prefix", () => {
    expect(() => new LocalLingeringParts({ directory: "/tmp" })).toThrow(ConfigurationError);
    expect(new LocalLingeringParts({ directory: "/tmp", partPrefix: "p" }).description).toContain("p-*");
  });
});
