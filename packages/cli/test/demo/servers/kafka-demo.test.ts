import { spawn } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { afterEach, describe, expect, it, vi } from "vitest";
import { buildProgram } from "../../../src/main.ts";
import { groupAlive, waitUntil } from "../demo-processes.ts";

const cli = fileURLToPath(new URL("../../../../../test/e2e/fixtures/exactly-cli.ts", import.meta.url));

/** Runs `exactly <args>` in this process and returns what it printed to stdout. */
async function exactly(...args: string[]): Promise<string[]> {
  const printed: string[] = [];
  vi.spyOn(console, "log").mockImplementation((line: unknown) => printed.push(String(line)));
  vi.spyOn(console, "error").mockImplementation(() => {});
  await buildProgram()
    .exitOverride()
    .parseAsync(["node", "exactly", ...args]);
  return printed;
}

describe("exactly demo --kafka", () => {
  afterEach(() => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
  });

  it("runs the window-sum job under SIGKILL and reports every window once, by both readers", async () => {
    const brokers = kafkaBrokers().join(",");
    const printed = await exactly(
      "demo",
      "--kafka",
      "--brokers",
      brokers,
      "--records",
      "10000",
      "--seed",
      "3",
      "--json",
    );
    const summary = JSON.parse(printed.at(-1) as string);
    expect(summary).toMatchObject({ events: 10_000, windows: 500, mismatches: [], kcatMismatches: [], ok: true });
    expect(printed.join("\n")).toContain("OK: every window committed exactly once");
    expect(process.exitCode).toBeUndefined();
  });

  it("runs as exactly demo kafka, the same job and the same verdict", async () => {
    const brokers = kafkaBrokers().join(",");
    const printed = await exactly("demo", "kafka", "--brokers", brokers, "--records", "4000", "--kills", "1", "--json");
    const summary = JSON.parse(printed.at(-1) as string);
    expect(summary).toMatchObject({ events: 4_000, mismatches: [], ok: true });
    expect(printed.join("\n")).toContain("OK: every window committed exactly once");
    expect(process.exitCode).toBeUndefined();
  });

  it("on Ctrl-C (SIGINT to its process group) while the job runs: SIGKILLs it, removes its checkpoints, names the topics it leaves, ends by SIGINT", async () => {
    const tmp = await mkdtemp(join(tmpdir(), "exactly-kafka-demo-stop-"));
    const demo = spawn(
      process.execPath,
      [
        "--conditions=@exactly/source",
        cli,
        "demo",
        "kafka",
        "--brokers",
        kafkaBrokers().join(","),
        "--records",
        "1000000",
        "--kills",
        "0",
      ],
      { detached: true, env: { ...process.env, TMPDIR: tmp }, stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    demo.stderr.on("data", (chunk) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      demo.on("exit", (code, signal) => resolve({ code, signal })),
    );
    const pgid = demo.pid as number;
    try {
      const checkpointDirs = async () => (await readdir(tmp)).filter((n) => n.startsWith("exactly-window-sum-"));
      // The job is running once its first checkpoint is in the run's checkpoint folder.
      await waitUntil(
        "the job's first checkpoint",
        async () => {
          const [dir] = await checkpointDirs();
          return dir !== undefined && (await readdir(join(tmp, dir)).catch(() => [])).length > 0;
        },
        120_000,
      );
      process.kill(-pgid, "SIGINT");
      const { signal } = await exited;
      expect(signal, stderr).toBe("SIGINT");
      expect(stderr).toMatch(
        /stopped by SIGINT; its checkpoints were removed; the topics window-sum-in-\S+ and window-sum-out-\S+ are left on the broker/,
      );
      await waitUntil("every process of the demo gone", () => !groupAlive(pgid), 10_000);
      expect(await checkpointDirs()).toEqual([]);
    } finally {
      if (groupAlive(pgid)) process.kill(-pgid, "SIGKILL");
      await rm(tmp, { recursive: true, force: true });
    }
  });

  it("refuses the file demo's options with --kafka, naming them", async () => {
    await expect(exactly("demo", "--kafka", "--out", "/tmp/x", "--guarantee", "at-least-once")).rejects.toThrow(
      "--out, --guarantee only applies to the demo job, not --kafka",
    );
  });
});
