// The guides are plain Markdown, read on GitHub as in the built site: their code is inline.
// A block marked `<!-- from <file>#<region> -->` shows a region of a file that other tests
// type-check (tsconfig.test.json) and run; it must be that region, as it is now.

import { readdir, readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { fencedBlocks, region } from "./fixtures/guide-blocks.ts";
import { root } from "./fixtures/packed-packages.ts";

async function guides(): Promise<string[]> {
  const docs = join(root, "docs");
  const inDocs = (await readdir(docs)).filter((n) => n.endsWith(".md")).map((n) => join(docs, n));
  const connectors = join(docs, "connectors");
  const inConnectors = (await readdir(connectors)).filter((n) => n.endsWith(".md")).map((n) => join(connectors, n));
  return [join(root, "README.md"), ...inDocs, ...inConnectors];
}

describe("the guides' code", () => {
  it("is inline Markdown, and each block taken from a file is that file's region as it is now", async () => {
    let checked = 0;
    for (const guide of await guides()) {
      const text = await readFile(guide, "utf8");
      // A directive only TypeDoc expands shows as itself on GitHub.
      expect(text, guide).not.toMatch(/^\{@include/m);
      for (const block of fencedBlocks(text)) {
        if (!block.from) continue;
        const [file, name] = block.from.split("#") as [string, string | undefined];
        const source = await readFile(resolve(dirname(guide), file), "utf8");
        expect(block.code, `${guide}:${block.line} differs from ${block.from}`).toBe(region(source, name));
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(15);
  });
});
