// I9 for the file sink on local disk: the old owner's late commit is harmless, nothing it
// completes after the takeover is published, and its in-progress files are removed by the
// successor's next recovery at the latest (takeover-scenario.ts).

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "vitest";
import { localFileSink } from "../src/index.ts";
import { idCountsInFiles, listOutput } from "./helpers.ts";
import { type Row, runTakeover } from "./takeover-scenario.ts";

describe("I9: the file sink on local disk across a takeover", () => {
  it("the old owner's late commit is harmless, what it pre-commits after the takeover is never published, and the successor's next recovery removes its in-progress files", async () => {
    const directory = await mkdtemp(join(tmpdir(), "exactly-file-fence-"));
    await runTakeover({
      sink: () => localFileSink<Row>({ directory }),
      published: async () => {
        const counts = await idCountsInFiles((await listOutput(directory)).visible);
        return [...counts].flatMap(([id, n]) => Array<number>(n).fill(id)).sort((a, b) => a - b);
      },
      unpublished: async () => (await listOutput(directory)).hidden.length,
    });
  });
});
