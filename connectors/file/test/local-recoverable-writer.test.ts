import { mkdir, mkdtemp, readFile, stat, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LineBuffer } from "../src/line-buffer.ts";
import { LocalRecoverableWriter } from "../src/local/local-recoverable-writer.ts";

const temp = () => mkdtemp(join(tmpdir(), "exactly-local-writer-"));

describe("a local open part writing behind", () => {
  it("writes every line once and in order while the next buffer fills, and counts every byte it accepted", async () => {
    const base = await temp();
    const writer = new LocalRecoverableWriter(base);
    const part = await writer.openPart({ bucket: "", name: "part-0" });
    const lines: string[] = [];
    let accepted = 0;
    // About twelve buffers' worth, so that many writes run behind the appends.
    for (let i = 0; accepted < 12 * LineBuffer.FLUSH_BYTES; i++) {
      // ASCII, so that a buffered line's characters are its bytes and the length is exact.
      const line = `{"n":${i}}\n`;
      lines.push(line);
      accepted += line.length;
      const writing = part.append(line);
      // Under way, buffered or written, every accepted byte counts towards rolling.
      expect(part.length).toBe(accepted);
      if (writing) await writing;
    }
    const closed = await part.closeForCommit();
    expect(closed.length).toBe(accepted);
    await writer.commit(closed);
    const published = join(base, "part-0");
    expect((await stat(published)).size).toBe(accepted);
    expect(await readFile(published, "utf8")).toBe(lines.join(""));
  });

  it("fails the next append or flush with the error of a write that failed behind it", async () => {
    const base = await temp();
    await mkdir(base, { recursive: true });
    // The part's in-progress file is the full device: every write to it fails with ENOSPC.
    await symlink("/dev/full", join(base, ".part-0.inprogress"));
    const writer = new LocalRecoverableWriter(base);
    const part = await writer.openPart({ bucket: "", name: "part-0" });
    const line = `${"x".repeat(1023)}\n`;
    let failure: unknown;
    try {
      // The first full buffer starts a write and returns; the one after waits for it and throws.
      for (let i = 0; i < 3 * (LineBuffer.FLUSH_BYTES / line.length); i++) {
        const writing = part.append(line);
        if (writing) await writing;
      }
      await part.flush();
    } catch (error) {
      failure = error;
    }
    expect((failure as NodeJS.ErrnoException | undefined)?.code).toBe("ENOSPC");
    await part.discard();
  });
});
