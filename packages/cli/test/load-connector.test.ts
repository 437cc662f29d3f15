// A demo's connector is an optional peer: when it is missing, `--sink <name>` fails saying
// which package to install, instead of a bare module-not-found error. Another import failure
// is not mistaken for a missing package.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { loadConnector } from "../src/load-connector.ts";

describe("loading a demo's connector", () => {
  it("a missing package: names the --sink and the install command", async () => {
    await expect(loadConnector("@exactly/no-such-connector", "--sink redis")).rejects.toThrow(
      "--sink redis: needs @exactly/no-such-connector, which is not installed; install it next to @exactly/cli: @exactly/no-such-connector is not on npm yet: in a clone of the repository, pnpm install, then pnpm pack its package",
    );
  });

  it("a connector whose optional peer is missing: names the peer to install", async () => {
    const module = join(await mkdtemp(join(tmpdir(), "exactly-peer-")), "needs-peer.mjs");
    await writeFile(module, 'import "@exactly-test/no-such-peer";\n');
    await expect(
      loadConnector(pathToFileURL(module).href, "--sink s3", ["@exactly-test/no-such-peer"]),
    ).rejects.toThrow(
      "which needs @exactly-test/no-such-peer, not installed; install it next to @exactly/cli: npm install @exactly-test/no-such-peer",
    );
  });

  it("an installed package loads", async () => {
    const core = await loadConnector<typeof import("@exactly/core")>("@exactly/core", "--sink file");
    expect(typeof core.StreamJob).toBe("function");
  });

  it("any other failure is passed on as it is", async () => {
    const bad = new URL("data:text/javascript,throw new Error('broken module')").href;
    await expect(loadConnector(bad, "--sink redis")).rejects.toThrow("broken module");
  });
});
