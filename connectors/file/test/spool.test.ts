import { spawnSync } from "node:child_process";
import { chmod, mkdir, mkdtemp, readdir, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigurationError } from "@exactly/core";
import { afterEach, describe, expect, it } from "vitest";
import { createSpoolDirectory, defaultSpoolRoot, openSpoolFile } from "../src/s3/spool.ts";

const temp = () => mkdtemp(join(tmpdir(), "exactly-spool-"));

/** A pid no process has now: one of a child that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  return Number(child.stdout);
}

describe("I8: the S3 spool's local folders", () => {
  const savedTmp = process.env.TMPDIR;
  afterEach(() => {
    if (savedTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmp;
  });

  it("refuses a default spool root someone planted as a symlink, and spools nothing there", async () => {
    const tmp = await temp();
    process.env.TMPDIR = tmp;
    const theirs = join(tmp, "theirs");
    await mkdir(theirs);
    const root = defaultSpoolRoot();
    await symlink(theirs, root);
    const error = await createSpoolDirectory(root, { configured: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("spoolDirectory");
    expect((error as Error).message).toContain(root);
    expect(await readdir(theirs)).toEqual([]);
  });

  it("refuses a configured spool root that others can write to", async () => {
    const root = await temp();
    await chmod(root, 0o777);
    const error = await createSpoolDirectory(root, { configured: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("spoolDirectory");
    expect(await readdir(root)).toEqual([]);
  });

  it("keeps the root and the writer's folder private, and spool files readable by us alone", async () => {
    const tmp = await temp();
    process.env.TMPDIR = tmp;
    const dir = await createSpoolDirectory(defaultSpoolRoot(), { configured: false });
    expect((await stat(defaultSpoolRoot())).mode & 0o777).toBe(0o700);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    const handle = await openSpoolFile(join(dir, "n-1"));
    await handle.close();
    expect((await stat(join(dir, "n-1"))).mode & 0o777).toBe(0o600);
    // Never through something planted at a spool file's path.
    await symlink(join(tmp, "elsewhere"), join(dir, "n-2"));
    await expect(openSpoolFile(join(dir, "n-2"))).rejects.toMatchObject({ code: "EEXIST" });
  });

  it("removes the folder of a writer whose process is gone, and keeps a running one's", async () => {
    const root = join(await temp(), "spool");
    const mine = await createSpoolDirectory(root, { configured: true });
    const crashed = join(root, `spool-${deadPid()}-0a0b`);
    await mkdir(crashed);
    await writeFile(join(crashed, "n-1"), "left behind");
    const next = await createSpoolDirectory(root, { configured: true });
    const left = await readdir(root);
    expect(left.sort()).toEqual([mine, next].map((d) => d.slice(root.length + 1)).sort());
  });
});
