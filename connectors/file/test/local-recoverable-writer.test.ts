import { closeSync, openSync, readdirSync, readlinkSync } from "node:fs";
import { mkdir, mkdtemp, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LineBuffer } from "../src/line-buffer.ts";
import { LocalRecoverableWriter } from "../src/local/local-recoverable-writer.ts";
import { PartExistsError } from "../src/recoverable-writer.ts";

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
    const writer = new LocalRecoverableWriter(base);
    const part = await writer.openPart({ bucket: "", name: "part-0" });
    // The part's file descriptor is made to name the full device, where every write fails
    // with ENOSPC: close it and open /dev/full, which takes the lowest free descriptor.
    const inProgress = join(base, ".part-0.inprogress");
    const fd = Number(
      readdirSync("/proc/self/fd").find((n) => readlinkSync(`/proc/self/fd/${n}`, "utf8") === inProgress),
    );
    expect(fd).toBeGreaterThan(2);
    closeSync(fd);
    expect(openSync("/dev/full", "w")).toBe(fd);
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

describe("I8: files planted in a local writer's way", () => {
  it("refuses to open a part whose in-progress path is a symlink, naming the path, and leaves its target alone", async () => {
    const root = await temp();
    const base = join(root, "base");
    await mkdir(base);
    const target = join(root, "victim");
    await writeFile(target, "precious\n");
    await symlink(target, join(base, ".part-s-0-1-0.inprogress"));
    const writer = new LocalRecoverableWriter(base);
    const error = await writer.openPart({ bucket: "", name: "part-s-0-1-0" }).then(
      async (part) => {
        part.append("overwritten\n");
        await writer.commit(await part.closeForCommit());
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain(".part-s-0-1-0.inprogress");
    expect(await readFile(target, "utf8")).toBe("precious\n");
    await expect(stat(join(base, "part-s-0-1-0"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("refuses to recover a part whose in-progress file was replaced by a symlink, publishing nothing", async () => {
    const root = await temp();
    const base = join(root, "base");
    await mkdir(base);
    const target = join(root, "victim");
    await writeFile(target, "precious, and longer than the part\n");
    await symlink(target, join(base, ".part-s-0-1-0.inprogress"));
    const writer = new LocalRecoverableWriter(base);
    const error = await writer.recoverAndCommit({ bucket: "", name: "part-s-0-1-0", length: 4 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain(".part-s-0-1-0.inprogress");
    expect(await readFile(target, "utf8")).toBe("precious, and longer than the part\n");
    await expect(stat(join(base, "part-s-0-1-0"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("never takes another file of the same name and length for its own part, and keeps its data", async () => {
    const base = await temp();
    const writer = new LocalRecoverableWriter(base);
    await writeFile(join(base, "part-s-0-1-0"), "other\n");
    const part = await writer.openPart({ bucket: "", name: "part-s-0-1-0" });
    part.append("ours!\n");
    const closed = await part.closeForCommit();
    for (const publish of [() => writer.commit(closed), () => writer.recoverAndCommit(closed)]) {
      await expect(publish()).rejects.toBeInstanceOf(PartExistsError);
      expect(await readFile(join(base, "part-s-0-1-0"), "utf8")).toBe("other\n");
      expect(await readFile(join(base, ".part-s-0-1-0.inprogress"), "utf8")).toBe("ours!\n");
    }
  });

  it("recommits a part a crash left both published and in progress (one file, two names)", async () => {
    const base = await temp();
    const writer = new LocalRecoverableWriter(base);
    const part = await writer.openPart({ bucket: "", name: "part-s-0-1-0" });
    part.append("ours!\n");
    const closed = await part.closeForCommit();
    const { link } = await import("node:fs/promises");
    await link(join(base, ".part-s-0-1-0.inprogress"), join(base, "part-s-0-1-0"));
    await writer.recoverAndCommit(closed);
    expect(await readFile(join(base, "part-s-0-1-0"), "utf8")).toBe("ours!\n");
    await expect(stat(join(base, ".part-s-0-1-0.inprogress"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("recovers a part of a checkpoint written before part names had a nonce", async () => {
    const base = await temp();
    const writer = new LocalRecoverableWriter(base);
    // As an earlier version named it, and with bytes past its pre-committed length.
    await writeFile(join(base, ".part-files-0-3-0.inprogress"), "kept\ntorn");
    await writer.recoverAndCommit({ bucket: "", name: "part-files-0-3-0", length: 5 });
    expect(await readFile(join(base, "part-files-0-3-0"), "utf8")).toBe("kept\n");
    // Recommitted again (a crash before the checkpoint was marked committed): nothing changes.
    await writer.recoverAndCommit({ bucket: "", name: "part-files-0-3-0", length: 5 });
    expect(await readFile(join(base, "part-files-0-3-0"), "utf8")).toBe("kept\n");
  });
});
