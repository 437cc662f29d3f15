import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { afterEach, describe, expect, it, vi } from "vitest";
import { buildProgram } from "../../../src/main.ts";

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

  it("refuses the file demo's options with --kafka, naming them", async () => {
    await expect(exactly("demo", "--kafka", "--out", "/tmp/x", "--guarantee", "at-least-once")).rejects.toThrow(
      "--out, --guarantee only applies to the demo job, not --kafka",
    );
  });
});
